"""programs"""
