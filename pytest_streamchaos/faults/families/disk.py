"""The disk family: the filesystem under the query's checkpoint runs full (``fill_disk``).

Before the job starts, the run puts a small filesystem of its own (a tmpfs of ``size_mb``, 64 MB by
default) where the query's checkpoint will be: the location the job's code names (a relative one in
the driver's fresh working directory), an absolute path in its args, or the run's ``{checkpoint_dir}``.
Nothing else is on it: the event log, the driver's log and the harness's own files stay where they
were, so the run keeps observing while the disk is full. The fault takes every free byte of it
(fallocate, then writes until ``ENOSPC``), so that Spark's next checkpoint write fails with "No space
left on device"; the heal frees it. The mount lives as long as the run, registered with the reaper
(unmounted even when pytest is killed), and the checkpoint on it goes with it.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_streamchaos import storages
from pytest_streamchaos.faults.kind import FaultKind, JobSite
from pytest_streamchaos.faults.spec import FaultSpec, FaultSpecError, number
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.machine import commands
from pytest_streamchaos.stack.host import current

DEFAULT_SIZE_MB = 64
#: what fills the filesystem, in its root (Spark reads only its own subdirectories of a checkpoint)
FILLER = ".streamchaos-fill"
#: less than a page free is full: no write of a file's data gets through
FULL_BYTES = 4096
#: what the fault can fill
TARGETS = ("checkpoint",)


class SmallFilesystem:
    """A tmpfs of ``size_mb`` at ``path`` for one run: mounted, filled, freed, unmounted."""

    def __init__(self, path: Path, size_mb: int) -> None:
        self.path, self.size_mb = path, size_mb
        self.made: Path | None = None  #: the topmost directory made for the mount point (removed after)
        self.mounted = False
        self._key = f"streamchaos-fill-disk-{os.getpid()}-{id(self):x}"

    def mount(self) -> None:
        missing = [p for p in (self.path, *self.path.parents) if not p.exists()]
        self.made = missing[-1] if missing else None
        self.path.mkdir(parents=True, exist_ok=True)
        reaper = current().reaper
        # registered first: a pytest killed between the two still leaves no mount behind
        reaper.register_command(self._key, ["umount", "-l", str(self.path)])
        if self.made is not None:
            reaper.register_path(self.made)
        try:
            commands.run(["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m,mode=0755", "streamchaos-fill",
                          str(self.path)], timeout=15, fix="fill_disk needs to mount a tmpfs (root, CAP_SYS_ADMIN)")
        except commands.CommandError:
            self._unmade()
            raise
        self.mounted = True

    def release(self) -> None:
        """Unmount (lazily: a process of the job that still has a file open does not keep it mounted)
        and remove the directories made for it; what fails stays with the reaper."""
        if self.mounted:
            commands.run(["umount", "-l", str(self.path)], timeout=15)
            self.mounted = False
        self._unmade()

    def _unmade(self) -> None:
        if self.made is not None:
            shutil.rmtree(self.made, ignore_errors=True)
            current().reaper.unregister_path(self.made)
        current().reaper.unregister_command(self._key)

    def free_bytes(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def fill(self) -> int:
        """Take every free byte: fallocate what is free, then write a page at a time until the
        filesystem refuses (what rounding left); the filler's size."""
        fd = os.open(self.path / FILLER, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            free = self.free_bytes()
            if free:
                try:
                    os.posix_fallocate(fd, os.lseek(fd, 0, os.SEEK_END), free)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
            os.lseek(fd, 0, os.SEEK_END)
            page = bytes(FULL_BYTES)
            for _ in range(self.size_mb * 256 + 1):  # bounded: a page per round
                try:
                    if os.write(fd, page) < len(page):
                        continue  # the last bytes went: the next write is refused
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
            return os.fstat(fd).st_size
        finally:
            os.close(fd)

    def empty(self) -> None:
        (self.path / FILLER).unlink(missing_ok=True)

    def holds(self, location: str) -> bool:
        """Whether ``location`` (a path) is on this filesystem."""
        p = Path(os.path.realpath(location.removeprefix("file://").removeprefix("file:")))
        return p == self.path or self.path in p.parents


@dataclass
class DiskPlaces:
    """What a run's ``fill_disk`` faults fill: a small filesystem at each place its checkpoint may be."""

    filesystems: list[SmallFilesystem]

    def release(self) -> None:
        errors = []
        for fs in self.filesystems:
            try:
                fs.release()
            except Exception as exc:  # the others still go; the reaper unmounts this one when pytest exits
                errors.append(f"{fs.path}: {exc}")
        if errors:
            raise RuntimeError("; ".join(errors))


def mount_points(site: JobSite) -> list[Path]:
    """Where the small filesystems go: each place the query's checkpoint may be that can take one --
    not there yet or an empty directory, and above none of the harness's files. A place that cannot is
    left alone (if the query's checkpoint is there after all, the injection says so)."""
    out: list[Path] = []
    for loc in site.checkpoints:
        p = Path(os.path.realpath(loc))
        covers_harness = any(p == h or p in h.parents for h in site.harness)
        occupied = p.exists() and (not p.is_dir() or any(p.iterdir()))
        nested = any(p == q or q in p.parents or p in q.parents for q in out)
        if not (covers_harness or occupied or nested or p == Path(p.anchor)):
            out.append(p)
    return out


class FillDisk(FaultKind[list[SmallFilesystem]]):
    """``fill_disk``: the filesystem under the query's checkpoint runs full for ``duration``."""

    name = "fill_disk"
    doc = ("fill the filesystem the query's checkpoint is on (a tmpfs of size_mb the run mounts where the "
           "checkpoint will be) until no byte is free; free it on heal")
    args = {"target": "what runs full: 'checkpoint' (default), the filesystem under the query's checkpoint",
            "size_mb": f"size of that filesystem in MB (default {DEFAULT_SIZE_MB})"}

    @classmethod
    def check_target(cls, target: str | None) -> str | None:
        target = target or TARGETS[0]
        if target not in TARGETS:
            raise FaultSpecError(f"@{cls.name}: target={target!r} must be one of {', '.join(map(repr, TARGETS))}")
        return target

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        if "size_mb" in params:
            number(cls.name, "size_mb", params["size_mb"], minimum=1, integer=True)

    @classmethod
    def unavailable(cls, spec: FaultSpec) -> str | None:
        if not commands.has_sys_admin():
            return (f"{cls.name} needs root or CAP_SYS_ADMIN to mount the small filesystem the query's checkpoint "
                    "goes on (run pytest as root)")
        if not (shutil.which("mount") and shutil.which("umount")):
            return f"{cls.name} needs `mount` and `umount` on PATH (apt-get install mount)"
        return None

    @classmethod
    def refused_by_run(cls, spec: FaultSpec, *, checkpoint: str) -> str | None:
        storage = storages.get(checkpoint)
        if not storage.on_host:
            return (f"the run keeps its checkpoint on {storage.title} (checkpoint={checkpoint!r}), and this fault "
                    f"fills a local filesystem: use setup=JobSetup(checkpoint=\"{storages.ON_HOST}\")")
        return None

    @classmethod
    def before_job(cls, specs: Sequence[FaultSpec], site: JobSite) -> DiskPlaces:
        """A small filesystem at each place the checkpoint may be (:func:`mount_points`), of the largest
        ``size_mb`` the plan asks for; one line naming the fix when there is no such place."""
        if not storages.get(site.storage).on_host:
            raise ValueError(f"@{cls.name}: the checkpoint is on {site.storage}; this fault fills a local filesystem")
        if site.separate_hosts:
            raise ValueError(f"@{cls.name}: the job's executors run in containers, which do not see a filesystem "
                             "mounted on this host after they started: run it on the local backend")
        points = mount_points(site)
        if not points:
            raise ValueError(f"@{cls.name}: no place where the query's checkpoint may be can take a filesystem of its "
                             f"own ({', '.join(site.checkpoints) or 'none known'}: each exists with files in it, or "
                             "holds the run's logs): give the job a fresh checkpoint path, e.g. "
                             "args=[\"{checkpoint_dir}\"]")
        size = max(int(s.params.get("size_mb", DEFAULT_SIZE_MB)) for s in specs)
        places = DiskPlaces([])
        try:
            for p in points:
                fs = SmallFilesystem(p, size)
                fs.mount()
                places.filesystems.append(fs)
        except BaseException:
            places.release()
            raise
        return places

    def target(self, planned: PlannedFault) -> str:
        return str(planned.spec.target)

    def _filesystems(self) -> list[SmallFilesystem]:
        """The run's small filesystems, the one under the query's checkpoint first; an error naming both
        when the query's checkpoint is on none of them (the fault would fill a disk nothing writes to)."""
        places = self.ctx.prepared.get(self.name)
        if not isinstance(places, DiskPlaces):
            raise RuntimeError(f"{self.name}: the run mounted no small filesystem for the checkpoint before the job "
                               "started")
        found = self.ctx.checkpoint.checkpoint_dir if self.ctx.checkpoint is not None else None
        under = [fs for fs in places.filesystems if found is not None and fs.holds(found)]
        if not under:
            mounts = ", ".join(str(fs.path) for fs in places.filesystems)
            raise RuntimeError(f"the query's checkpoint ({found or 'not found'}) is not on the small filesystem the "
                               f"run mounted at {mounts}: name it in the job's code or args, e.g. "
                               "args=[\"{checkpoint_dir}\"]")
        return under + [fs for fs in places.filesystems if fs not in under]

    def inject(self, planned: PlannedFault) -> list[SmallFilesystem]:
        filesystems = self._filesystems()
        for fs in filesystems:
            fs.fill()
        return filesystems

    def confirm(self, planned: PlannedFault, filesystems: list[SmallFilesystem]) -> dict[str, object]:
        """No byte is free under the checkpoint."""
        fs = filesystems[0]
        free = fs.free_bytes()
        if free >= FULL_BYTES:
            raise RuntimeError(f"{fs.path} still has {free} bytes free after it was filled")
        return {"free_bytes": free, "size_mb": fs.size_mb, "mount": str(fs.path)}

    def check(self, planned: PlannedFault, filesystems: list[SmallFilesystem]) -> str | None:
        """Keeps it full: what Spark freed meanwhile (a temporary file it removed) is taken again; a
        filesystem that cannot be kept full has stopped acting."""
        for fs in filesystems:
            if fs.free_bytes() >= FULL_BYTES:
                fs.fill()
                if fs.free_bytes() >= FULL_BYTES:
                    return f"{fs.path} has {fs.free_bytes()} bytes free and cannot be filled again"
        return None

    def heal(self, planned: PlannedFault, filesystems: list[SmallFilesystem]) -> None:
        for fs in filesystems:
            fs.empty()


KINDS = (FillDisk,)
