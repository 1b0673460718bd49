"""Where the measured operator tables come from.

`aic/` converts the measured database of NVIDIA's aiconfigurator-core; `pytorch/` measures on
the local machine with PyTorch; `shapes` is what both keep or measure by default (the per-device
operator shapes of the shipped model cards). Both write the profile format of
`solver/profiles/format.py`; the `profiles` command that drives them is `solver/cli/profiles.py`.
"""
