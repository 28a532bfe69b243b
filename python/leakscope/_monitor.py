"""The Flower Mod's monitor (`leakage_mod(..., mode="monitor")`): the reply leaves at once and its
audit runs in a process of its own, beside the training, which writes the record when it is done.

A round's audit is queued as a file in a spool folder beside the records (`<records>.pending/`),
written whole before it is named a job, and a monitor process is started for it (`python -m
leakscope._monitor_main SPOOL RECORDS`, in a session of its own and at a lower priority, so that the
client's training comes first). The monitor that holds the spool's lock audits every job there in
order, appends its record and only then removes the job; one started while another holds the lock
leaves its job to that one and ends. A job whose monitor was killed (a simulation's actors are,
with what they started, when it ends) stays in the spool until the next monitor or `drain` audits
it: nothing queued is lost, and nothing is written twice (a record names its job)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Set

import numpy as np

#: The job files' names: `job-<time ns>-<pid>-<random>.npz`, in the order they were queued.
_PREFIX = "job-"


def spool_of(records: Path) -> Path:
    """The folder that holds the audits queued for `records`."""
    return records.with_name(records.name + ".pending")


def queue(records: Path, job: Dict[str, Any]) -> str:
    """Write `job` (its arrays `sent` and `got`, its rows' CSV `table`, the rest JSON) into the
    spool and start a monitor for it; its name, which its record will carry."""
    spool = spool_of(records)
    spool.mkdir(parents=True, exist_ok=True)
    name = f"{_PREFIX}{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    meta = {k: v for k, v in job.items() if k not in ("sent", "got", "table")}
    arrays = {f"sent{i}": a for i, a in enumerate(job["sent"])}
    arrays.update({f"got{i}": a for i, a in enumerate(job["got"])})
    arrays["table"] = np.frombuffer(job["table"], dtype=np.uint8)
    tmp = spool / f"{name}.tmp"
    with open(tmp, "wb") as f:
        np.savez(f, meta=np.array(json.dumps({**meta, "job": name})), **arrays)
    os.replace(tmp, spool / f"{name}.npz")  # a job is whole or absent
    _start(spool, records)
    return name


#: The monitor processes this process started and has not yet seen end.
_started: List["subprocess.Popen[bytes]"] = []


def _start(spool: Path, records: Path) -> None:
    _started[:] = [p for p in _started if p.poll() is None]  # reaps the ones that ended
    with open(spool / "monitor.log", "ab") as log:
        _started.append(
            subprocess.Popen(
                [sys.executable, "-m", "leakscope._monitor_main", str(spool), str(records)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                close_fds=True,
            )
        )


def wait_started() -> None:
    """Wait until every monitor process this process started has ended."""
    while _started:
        _started.pop().wait()


def load(path: Path) -> Dict[str, Any]:
    """A queued job as `queue` was given it."""
    with np.load(path, allow_pickle=False) as z:
        job: Dict[str, Any] = json.loads(str(z["meta"]))
        count = len(job["names"])
        job["sent"] = [z[f"sent{i}"] for i in range(count)]
        job["got"] = [z[f"got{i}"] for i in range(count)]
        job["table"] = z["table"].tobytes()
    return job


def _written(records: Path) -> Set[str]:
    if not records.exists():
        return set()
    with open(records, encoding="utf-8") as f:
        return {r["job"] for r in (json.loads(line) for line in f if line.strip()) if r.get("job")}


def drain(records: Path, audit: Callable[[Dict[str, Any]], Dict[str, Any]], wait: bool = True) -> List[str]:
    """Audit every job queued for `records` that no monitor has written yet and append their
    records; the jobs written here. `wait`: once the monitor holding the spool's lock (if any) is
    done; else, where one holds it, leave the jobs to it (it looks at the spool again once it has
    let go of the lock, so a job queued meanwhile is not left behind)."""
    import fcntl  # POSIX: the monitor runs on Linux and macOS

    spool = spool_of(records)
    spool.mkdir(parents=True, exist_ok=True)
    done: List[str] = []
    while True:
        with open(spool / "lock", "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return done
            try:
                done.extend(_audit_all(spool, records, audit))
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        if not any(spool.glob(f"{_PREFIX}*.npz")):
            return done


def _audit_all(spool: Path, records: Path, audit: Callable[[Dict[str, Any]], Dict[str, Any]]) -> List[str]:
    """Under the spool's lock: every job there, in the order queued, until none is left."""
    done: List[str] = []
    written = _written(records)
    while True:
        jobs = sorted(p for p in spool.glob(f"{_PREFIX}*.npz") if p.stem not in done)
        if not jobs:
            return done
        for path in jobs:
            if path.stem not in written:
                job: Dict[str, Any] = {"job": path.stem}
                try:
                    job = load(path)
                    record = audit(job)
                except Exception as e:  # the record says so; the next job still runs
                    record = {k: job.get(k) for k in ("job", "round", "client", "mode")}
                    record.update(attacked="nothing", error=f"{type(e).__name__}: {e}")
                with open(records, "a", encoding="utf-8") as f:
                    f.write(json.dumps(record) + "\n")
            path.unlink()
            done.append(path.stem)
