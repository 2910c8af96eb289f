"""The score table of the paper: :class:`platinum_jax.data.ScoreTable` plus Epoch AI's files."""

from __future__ import annotations

from pathlib import Path

from platinum_jax._names import UnknownNameError
from platinum_jax.data import ScoreTable as _Scores

__all__ = ["ScoreTable", "UnknownNameError"]


class ScoreTable(_Scores):
    __doc__ = _Scores.__doc__

    @classmethod
    def from_epoch(cls, raw_dir: str | Path, *, min_benchmarks: int = 4,
                   min_release_date: str | None = "2022-11-01", duplicates: str = "max",
                   **kw) -> ScoreTable:
        """Epoch AI's ``raw/`` directory (benchmark runs plus external leaderboards) through
        :func:`platinum_jax.importers.read_epoch_raw` with the paper's filters (models with at
        least ``min_benchmarks`` scores, released on or after ``min_release_date``, repeated
        runs reduced by ``duplicates``); other keywords go to :meth:`from_frame`."""
        from platinum_jax.importers import read_epoch_raw

        raw_dir = Path(raw_dir)
        if not raw_dir.is_dir():
            raise FileNotFoundError(f"Epoch raw directory {str(raw_dir)!r} does not exist")
        frame = read_epoch_raw(raw_dir, min_benchmarks=min_benchmarks,
                               min_release_date=min_release_date, duplicates=duplicates)
        kw.setdefault("name", f"Epoch data in {raw_dir.name}/")
        return cls.from_frame(frame, **kw)
