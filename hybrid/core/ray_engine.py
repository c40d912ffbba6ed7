"""Where batch jobs run: Ray (local mode or a cluster) or in-process, behind one interface.

The build and search code is written against :class:`Engine` only:

* ``map_batches(paths, udf, ...)`` - a Ray Data batch job: the lines of text files in batches through a
  callable class (constructed once per worker, so models and JVMs load once), outputs in input order;
* ``map_tasks(fn, calls)`` - independent tasks (e.g. one Lucene index per shard);
* ``actor(cls, ...)`` + ``gather(futures)`` - long-lived workers (e.g. a shard searcher per process).

:class:`RayEngine` runs them as Ray Data jobs, Ray tasks and Ray actors, with GPUs requested for a stage
only when the cluster has them. :class:`LocalEngine` runs the very same callables in this process, which is
what happens when Ray is not installed: Ray is an optional extra (``pip install 'hybrid-cmr[ray]'``), and a
build or search gives the same result on either engine.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hybrid.core.errors import ConfigError
from hybrid.core.progress import progress as progress_bar

log = logging.getLogger(__name__)

ENGINES = ("auto", "ray", "local")
Batch = dict[str, np.ndarray]


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
        import ray.data  # noqa: F401
    except ImportError:
        return False
    return True


def _as_columns(batch: dict[str, Any]) -> dict[str, list]:
    return {key: list(value) for key, value in batch.items()}


def read_line_batches(paths: Iterable[str | Path], batch_size: int) -> Iterator[Batch]:
    """The lines of ``paths`` (in order, empty lines dropped) as ``{"text": array}`` batches (Ray Data's format)."""
    lines: list[str] = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                line = line.rstrip("\n")
                if not line:
                    continue
                lines.append(line)
                if len(lines) >= batch_size:
                    yield {"text": np.array(lines, dtype=object)}
                    lines = []
    if lines:
        yield {"text": np.array(lines, dtype=object)}


class Future:
    """An already computed result (the in-process engine's futures)."""

    def __init__(self, value: Any):
        self.value = value


class Engine(ABC):
    name: str = "engine"

    @abstractmethod
    def map_batches(self, paths: list[str | Path], udf: type, udf_kwargs: dict[str, Any], batch_size: int, *,
                    num_gpus: float = 0.0, concurrency: int | None = None, progress: bool = False,
                    desc: str = "batches") -> Iterator[dict[str, list]]:
        """Run ``udf(**udf_kwargs)`` over ``{"text": lines}`` batches of the files; yield its outputs in order."""

    @abstractmethod
    def map_tasks(self, fn: Callable, calls: list[tuple], *, num_cpus: float = 1.0) -> list:
        """``[fn(*args) for args in calls]``, possibly in parallel (each in its own worker on Ray)."""

    @abstractmethod
    def actor(self, cls: type, *args: Any, num_cpus: float = 0.0, **kwargs: Any) -> Actor:
        """A long-lived ``cls(*args, **kwargs)``; call its methods with :meth:`Actor.call`."""

    @abstractmethod
    def gather(self, futures: list) -> list:
        """The results of :meth:`Actor.call` futures, in order."""

    @abstractmethod
    def gpus(self) -> int:
        """GPUs this engine can place work on (0 on CPU-only machines)."""

    @property
    def parallel(self) -> bool:
        """True when actors live in other processes (queries must be shipped as text, not Java objects)."""
        return False

    def close(self) -> None:  # noqa: B027 - nothing to release in-process; Ray overrides
        return None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Actor(ABC):
    @abstractmethod
    def call(self, method: str, *args: Any) -> Any: ...


@dataclass
class LocalActor(Actor):
    obj: Any

    def call(self, method: str, *args: Any) -> Future:
        return Future(getattr(self.obj, method)(*args))


class LocalEngine(Engine):
    """Runs everything in this process, sequentially (parallelism comes from the callables themselves,
    e.g. Lucene's indexing threads or the Java fan-out over shards)."""

    name = "local"

    def map_batches(self, paths, udf, udf_kwargs, batch_size, *, num_gpus=0.0, concurrency=None, progress=False,
                    desc="batches"):
        fn = udf(**udf_kwargs)
        for batch in progress_bar(read_line_batches(paths, batch_size), desc=desc, unit="batch", enabled=progress):
            yield _as_columns(fn(batch))

    def map_tasks(self, fn, calls, *, num_cpus=1.0):
        return [fn(*args) for args in calls]

    def actor(self, cls, *args, num_cpus=0.0, **kwargs):
        return LocalActor(cls(*args, **kwargs))

    def gather(self, futures):
        return [f.value for f in futures]

    def gpus(self) -> int:
        try:
            import torch
        except ImportError:
            return 0
        return torch.cuda.device_count() if torch.cuda.is_available() else 0


@dataclass
class RayActor(Actor):
    handle: Any

    def call(self, method: str, *args: Any) -> Any:
        return getattr(self.handle, method).remote(*args)


class RayEngine(Engine):
    """Ray Data jobs, tasks and actors; connects to ``address`` (a cluster) or starts Ray on this machine."""

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None,
                 object_store_memory: int | None = None):
        import ray
        import ray.data

        self.ray = ray
        self.owns = not ray.is_initialized()
        if self.owns:
            kept = _save_jvm_signal_handlers()
            kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING}
            if address:
                kwargs["address"] = address
            else:
                kwargs["num_cpus"] = num_cpus
                if object_store_memory:
                    kwargs["object_store_memory"] = object_store_memory
            ray.init(**kwargs)
            _restore_signal_handlers(kept)
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True  # outputs in input order: deterministic builds
        logging.getLogger("ray.data").setLevel(logging.WARNING)

    @property
    def parallel(self) -> bool:
        return True

    def cpus(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def gpus(self) -> int:
        return int(self.ray.cluster_resources().get("GPU", 0))

    def map_batches(self, paths, udf, udf_kwargs, batch_size, *, num_gpus=0.0, concurrency=None, progress=False,
                    desc="batches"):
        context = self.ray.data.DataContext.get_current()
        context.enable_progress_bars = progress
        # Reading is light; with num_cpus=1 the read tasks could wait forever behind a worker pool that holds
        # every CPU (seen with Ray 2.60 on 2 cores).
        dataset = self.ray.data.read_text([str(p) for p in paths], num_cpus=0)
        workers = concurrency or (max(1, self.gpus()) if num_gpus else self.cpus())
        dataset = dataset.map_batches(
            udf, fn_constructor_kwargs=udf_kwargs, batch_size=batch_size, batch_format="numpy",
            compute=self.ray.data.ActorPoolStrategy(size=workers), num_cpus=0 if num_gpus else 1,
            num_gpus=num_gpus or None,
        )
        for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
            yield _as_columns(batch)

    def map_tasks(self, fn, calls, *, num_cpus=1.0):
        remote = self.ray.remote(fn).options(num_cpus=min(float(num_cpus), float(self.cpus())))
        return self.ray.get([remote.remote(*args) for args in calls])

    def actor(self, cls, *args, num_cpus=0.0, **kwargs):
        # num_cpus=0: shard searchers mostly wait on I/O and must all be placeable even when shards > cores;
        # SPREAD puts them on different machines of a cluster.
        remote = self.ray.remote(cls).options(num_cpus=num_cpus, scheduling_strategy="SPREAD")
        return RayActor(remote.remote(*args, **kwargs))

    def gather(self, futures):
        return self.ray.get(list(futures))

    def close(self) -> None:
        if self.owns and self.ray.is_initialized():
            self.ray.shutdown()


#: Signals the JVM handles itself; it raises SIGSEGV on purpose (implicit null checks, safepoint polls).
_JVM_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL")


def _save_jvm_signal_handlers() -> list[tuple[int, bytes]]:
    """The C-level handlers of the JVM's signals when a JVM is running in this process (else nothing).

    ``ray.init`` installs a crash handler for these signals, replacing the JVM's: the next signal the JVM
    raises on purpose then kills the driver (seen as a segfault in the first Lucene search after
    ``ray.init``). ``RAY_DISABLE_FAILURE_SIGNAL_HANDLER`` only helps if set before ``import ray``, so the
    handlers are saved here and put back after ``ray.init``. Raw ``struct sigaction`` bytes via libc.
    """
    import ctypes
    import signal

    try:
        import jnius_config
    except ImportError:
        return []
    if not jnius_config.vm_running:
        return []
    libc = ctypes.CDLL(None, use_errno=True)
    saved = []
    for name in _JVM_SIGNALS:
        number = int(getattr(signal, name))
        buffer = ctypes.create_string_buffer(512)  # larger than struct sigaction on any Linux ABI
        if libc.sigaction(number, None, buffer) == 0:
            saved.append((number, buffer.raw))
    return saved


def _restore_signal_handlers(saved: list[tuple[int, bytes]]) -> None:
    import ctypes

    if not saved:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for number, raw in saved:
        buffer = ctypes.create_string_buffer(raw, len(raw))
        if libc.sigaction(number, buffer, None) != 0:
            log.warning("could not restore the JVM's handler of signal %d after ray.init", number)


def get_engine(name: str | Engine = "auto", address: str | None = None, num_cpus: int | None = None,
               object_store_memory: int | None = None) -> Engine:
    """``ray``: Ray (falls back to in-process with a warning when Ray is not installed); ``local``: in-process;
    ``auto``: Ray when installed and ``address`` or ``RAY_ADDRESS`` names a cluster, else in-process."""
    if isinstance(name, Engine):
        return name
    if name not in ENGINES:
        raise ConfigError(None, None, f"unknown engine {name!r}; choose from {ENGINES}")
    address = address or os.environ.get("RAY_ADDRESS")
    if name == "auto":
        name = "ray" if ray_available() and address else "local"
    if name == "ray":
        if not ray_available():
            log.warning("Ray is not installed (pip install 'hybrid-cmr[ray]'); running in-process instead")
            return LocalEngine()
        return RayEngine(address=address, num_cpus=num_cpus, object_store_memory=object_store_memory)
    return LocalEngine()
