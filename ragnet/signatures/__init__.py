"""signatures"""
