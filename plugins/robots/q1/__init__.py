"""The bundled PrimeBot-Q1-class humanoid (an approximation, not the vendor model)."""
