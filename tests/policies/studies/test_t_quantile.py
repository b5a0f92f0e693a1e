"""The passivity study's confidence intervals use Student's t computed for any number of
seeds (issue 26, defect 5: the old table jumped to 1.96 above 10 degrees of freedom,
11 % too narrow at 11)."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.policies.studies.passivity import mean_ci, t_quantile


@pytest.mark.parametrize("dof,expected", [(1, 12.706205), (2, 4.302653), (10, 2.228139), (11, 2.200985),
                                          (30, 2.042272), (10_000, 1.960201)])
def test_t_quantiles_match_the_published_values(dof: int, expected: float) -> None:
    assert t_quantile(0.975, dof) == pytest.approx(expected, abs=1e-4)


def test_a_twelve_seed_interval_uses_eleven_degrees_of_freedom() -> None:
    values = [0.1 * i for i in range(12)]
    mean, half = mean_ci(values)
    assert mean == pytest.approx(np.mean(values))
    assert half == pytest.approx(2.200985 * np.std(values, ddof=1) / np.sqrt(12), rel=1e-5)
