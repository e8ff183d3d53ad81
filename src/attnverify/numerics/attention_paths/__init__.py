"""Numerics of attention paths (Tiberi, Mignacco, Irie, Sompolinsky, NeurIPS 2024)."""
