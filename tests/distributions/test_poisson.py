"""Poisson against torch.distributions."""

import pytest

import kael


def test_entropy_is_not_implemented_as_in_torch():
    with pytest.raises(NotImplementedError):
        kael.distributions.Poisson(2.0).entropy()
