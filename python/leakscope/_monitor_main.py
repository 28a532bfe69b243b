"""The monitor process's entry point (`python -m leakscope._monitor_main SPOOL RECORDS`): the
queue (`_monitor`) and the audit (`flower.audit_job`) meet here, so that neither imports the other
and the Flower modules import in one direction (flower → _monitor)."""
import os
import sys
from pathlib import Path

from leakscope._monitor import drain
from leakscope.flower import audit_job

if __name__ == "__main__":
    os.nice(10)
    drain(Path(sys.argv[2]), audit_job, wait=False)
