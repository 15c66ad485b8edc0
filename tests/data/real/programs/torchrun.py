# torchrun, with one fix for Debian's torch 1.13 under Python 3.11: Std.from_str iterates
# an IntFlag, which no longer yields the composite ALL or zero NONE, so "--tee 3" read None.
import sys
from torch.distributed.elastic.multiprocessing import api


def _from_str(vm):
    def to_std(v):
        return api.Std(int(v))
    if ":" in vm:
        return {int(k): to_std(v) for k, v in (kv.split(":") for kv in vm.split(","))}
    return to_std(vm)


api.Std.from_str = staticmethod(_from_str)
from torch.distributed import run  # noqa: E402
sys.exit(run.main())
