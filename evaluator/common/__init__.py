"""Torch code that both the judge's side and the runner's side run: the timing statistics and
device ceilings, the checks of what a call returns, the operator count, the shapes, and the
checker's Triton kernels for fingerprints and input draws. Imports neither `judge/` nor
`runner/`."""
