"""Priors named before NumPyro is imported: :class:`PriorSpec`, and the field descriptor that
builds a :class:`~platinum_jax.models.Param`'s prior on first read."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PriorSpec"]


@dataclass(frozen=True)
class PriorSpec:
    """A NumPyro distribution named but not yet built: ``PriorSpec("Normal", 0.0, 3.0)`` is
    ``numpyro.distributions.Normal(0.0, 3.0)``, made when called (with no arguments).

    The built-in models declare their priors this way, so that importing a model, or fitting
    it by least squares with its own penalty, does not import NumPyro (about half a second).
    """

    family: str
    args: tuple = ()

    def __init__(self, family: str, *args):
        object.__setattr__(self, "family", family)
        object.__setattr__(self, "args", tuple(args))

    def __call__(self):
        import numpyro.distributions as dist

        try:
            make = getattr(dist, self.family)
        except AttributeError:
            raise ValueError(
                f"PriorSpec: numpyro.distributions has no {self.family!r}; name a distribution "
                "class there (e.g. 'Normal', 'HalfNormal', 'StudentT')"
            ) from None
        return make(*self.args)

    def __repr__(self):
        return f"PriorSpec({', '.join(map(repr, (self.family, *self.args)))})"


def _is_factory(value) -> bool:
    # NumPyro distributions are callable too (calling one samples), so a factory is a callable
    # without the distribution interface.
    return callable(value) and not hasattr(value, "log_prob")


class _LazyPrior:
    """Field descriptor of :attr:`Param.prior`: stores what was given and hands out the
    distribution, calling a factory once on first read (the dataclass stays frozen to users)."""

    def __set_name__(self, owner, name):
        self._slot = f"_{name}_given"

    def __get__(self, obj, owner=None):
        if obj is None:
            return None  # the dataclass default: an improper flat prior
        value = obj.__dict__[self._slot]
        if _is_factory(value):
            value = value()
            if not hasattr(value, "log_prob"):
                raise TypeError(
                    f"Param.prior: the prior factory returned {type(value).__name__}, not a "
                    "distribution; return e.g. numpyro.distributions.Normal(0, 1)"
                )
            obj.__dict__[self._slot] = value
        return value

    def __set__(self, obj, value):
        obj.__dict__[self._slot] = value
