"""LongMemEval (V1) specifics that are neither file formats nor metrics: the errata overlay."""
