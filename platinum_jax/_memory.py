"""Memory before allocation: each fit's peak estimated from the table's shape, checked
against what the machine has, before the fit allocates its large arrays.

The estimates are upper-end figures of what the fits hold at their peak, measured on this
package's own fits (``ru_maxrss`` of a process before and after a fit):

* the marginal EM's row layout (more than 50 million cells, or ``dense=False``) evaluates
  every response at every node of its EM grid, and once at the EM's and the abilities' fine
  grid side by side: ``8 (2 nodes + eap_nodes)`` bytes a response (measured 2,750 bytes a
  response at 61 and 241 nodes, estimate 2,904);
* its dense layout holds the subject x item matrices (float64 K and N and their float32
  copies, 24 bytes a cell, and the device's copy) and, while building them, 16 bytes a
  response;
* a MAP fit holds about 400 bytes a response (its objective's and gradient's temporaries);
  the bootstrap that many for each of the ``chunk`` refits it runs at once, plus its
  replicates' estimates; NUTS its draws (constrained and unconstrained, in the posterior and
  in ArviZ's copy) and one gradient's temporaries per chain; Laplace three dense
  parameter x parameter matrices.

The memory available is ``$PLATINUM_JAX_MEMORY_LIMIT`` when set (bytes, or a number with
``KB``/``MB``/``GB``/``TB``; ``off`` skips the check), else the accelerator's free memory on a
GPU or TPU, else the host's: the container's limit less its use (cgroups) or the kernel's
``MemAvailable``, whichever is smaller.
"""

from __future__ import annotations

import os
import re

MEMORY_ENV = "PLATINUM_JAX_MEMORY_LIMIT"
# The marginal EM's dense layout when the subject x item matrix has at most this many cells
# (about 0.8 GB for the two float64 matrices): a matrix product beats a scatter over rows on
# a CPU. Above it, the row layout.
DENSE_CELLS = 50_000_000

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


class InsufficientMemory(MemoryError, ValueError):
    """A fit refused before it allocates: its estimated peak is more than the memory
    available (the message gives both figures and what to do). A ``ValueError`` too, so the
    command line reports it as an error, not a traceback."""


def gigabytes(n: float) -> str:
    return f"{n / 1e9:.3g} GB" if n >= 1e9 else f"{n / 1e6:.4g} MB"


def _parse(text: str) -> int | None:
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)\s*", text.lower())
    if m is None or m.group(2) not in _UNITS:
        raise ValueError(f"{MEMORY_ENV}={text!r} is not a memory size; give bytes or a "
                         "number with KB, MB, GB or TB (e.g. 16GB), or 'off' to skip the "
                         "memory check")
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _host_available() -> tuple[int, str] | None:
    found = []
    info = _read("/proc/meminfo")
    if info is not None:
        m = re.search(r"^MemAvailable:\s+(\d+)\s+kB", info, re.M)
        if m:
            found.append((int(m.group(1)) * 1024, "MemAvailable of /proc/meminfo"))
    for limit_file, used_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                  ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                   "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit, used = _read(limit_file), _read(used_file)
        if limit and limit.isdigit() and used and used.isdigit() and int(limit) < 2**60:
            found.append((int(limit) - int(used), f"the container's limit ({limit_file})"))
            break
    if not found:
        try:
            pages = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            found.append((int(pages), "free physical pages (sysconf)"))
        except (ValueError, OSError, AttributeError):
            return None
    return min(found)


def memory_available() -> tuple[int | None, str]:
    """Bytes a fit may use now and where the figure comes from (None: not known, or the
    check switched off with ``PLATINUM_JAX_MEMORY_LIMIT=off``)."""
    given = os.environ.get(MEMORY_ENV)
    if given is not None:
        if given.strip().lower() in ("off", "none", "0", ""):
            return None, f"{MEMORY_ENV}=off"
        return _parse(given), f"{MEMORY_ENV}={given}"
    import jax

    device = jax.devices()[0]
    if device.platform != "cpu":
        stats = device.memory_stats() or {}
        if "bytes_limit" in stats:
            free = int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
            return free, f"free memory of {device.device_kind}"
    host = _host_available()
    return (None, "unknown") if host is None else host


def check_memory(need: int, what: str, remedy: str) -> None:
    """Raise :class:`InsufficientMemory` when ``need`` bytes (the estimate for ``what``) are
    more than :func:`memory_available`; ``remedy`` says what to do instead."""
    have, source = memory_available()
    if have is None or need <= have:
        return
    raise InsufficientMemory(
        f"{what} needs about {gigabytes(need)} at its peak, and {gigabytes(max(have, 0))} "
        f"are available ({source}); {remedy}. (The estimate is from the table's shape; set "
        f"{MEMORY_ENV} to the memory this run may use, or to 'off', if it is wrong here.)")


def dense_layout(n_subjects: int, n_items: int, dense: bool | None = None) -> bool:
    """Whether the marginal EM holds the responses as a subject x item matrix: ``dense`` when
    given, else when the matrix has at most :data:`DENSE_CELLS` cells."""
    return n_subjects * n_items <= DENSE_CELLS if dense is None else bool(dense)


# Bytes a response (or a cell) at each fit's peak, measured (module docstring).
MAP_BYTES_PER_RESPONSE = 400
TABLE_BYTES_PER_RESPONSE = 64  # a response table read from a file, while it is built


def marginal_bytes(n_subjects: int, n_items: int, n_responses: int, *, nodes: int,
                   eap_nodes: int, dense: bool) -> int:
    """Peak bytes of the marginal EM's layout (module docstring)."""
    posterior = 4 * 8 * n_subjects * (nodes + eap_nodes)
    if dense:
        return 32 * n_subjects * n_items + 16 * n_responses + posterior
    return 8 * n_responses * (2 * nodes + eap_nodes) + posterior


def streamed_bytes(n_subjects: int, n_items: int, n_responses: int, *, nodes: int = 61,
                   eap_nodes: int = 241, block_cells: int = 1 << 22) -> int:
    """Peak bytes of the streamed 2PL (:func:`fit_streamed_2pl`): 9 bytes a response while
    the file is read, one byte a cell after, a block's float64 products and the subjects'
    posteriors."""
    return (9 * n_responses + n_subjects * n_items
            + 4 * 8 * min(block_cells, n_subjects * n_items)
            + 4 * 8 * n_subjects * (nodes + eap_nodes))


def nuts_bytes(problem, *, chains: int, samples: int) -> int:
    """Draws of every parameter (four copies: unconstrained, constrained, summary and ArviZ)
    and a gradient's temporaries per chain."""
    return (4 * 8 * chains * samples * problem.n_free
            + chains * MAP_BYTES_PER_RESPONSE * problem.table.n_responses)


def bootstrap_bytes(problem, *, replicates: int, chunk: int) -> int:
    return (chunk * MAP_BYTES_PER_RESPONSE * problem.table.n_responses
            + 2 * 8 * replicates * problem.n_free)
