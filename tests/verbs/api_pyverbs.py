# SPDX-License-Identifier: BSD-3-Clause
"""rdma-core's Python bindings (Debian's python3-pyverbs) on a vrdma device,
run through vrdma-run: every pyverbs module loads against vrdma's
libibverbs.so.1, and the queries and objects a pyverbs program starts with
work and agree with each other. Prints "api_pyverbs: PASS" or exits 1."""
import importlib
import pkgutil
import sys

import pyverbs
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.cq import CQ, CQEX, CqInitAttrEx
from pyverbs.mr import MR
from pyverbs.pd import PD

failed = 0


def check(cond, what):
    global failed
    print("api_pyverbs: %s: %s" % ("ok" if cond else "FAIL", what), flush=True)
    if not cond:
        failed += 1


bad = []
n = 0
for m in pkgutil.walk_packages(pyverbs.__path__, "pyverbs."):
    try:
        importlib.import_module(m.name)
        n += 1
    except Exception as ex:  # noqa: BLE001 - report every module
        bad.append("%s: %s" % (m.name, ex))
check(n > 0 and not bad, "%d pyverbs modules load %s" % (n, bad))

devs = d.get_device_list()
names = [x.name.decode() for x in devs]
check(names and names[0] == "vrdma0", "device list %s" % names)
ctx = d.Context(name=names[0])
a = ctx.query_device()
ax = ctx.query_device_ex()
check(a.vendor_id == 0x1AF4 and ax.orig_attr.max_qp == a.max_qp and
      ax.orig_attr.max_cqe == a.max_cqe,
      "query_device_ex agrees with query_device (vendor 0x%x, %d QPs)" % (a.vendor_id, a.max_qp))
check(ax.hca_core_clock == 1000000, "hca_core_clock %d kHz" % ax.hca_core_clock)
p = ctx.query_port(1)
check(p.link_layer == e.IBV_LINK_LAYER_ETHERNET and p.gid_tbl_len > 1,
      "port 1: Ethernet, %d GIDs" % p.gid_tbl_len)
g0 = str(ctx.query_gid(1, 0))
g1 = str(ctx.query_gid(1, 1))
check(g0.startswith("fe80:") and g1.startswith("0000:0000:0000:0000:0000:ffff:"),
      "GID 0 %s, GID 1 %s" % (g0, g1))
check(ctx.query_gid_type(1, 1) == e.IBV_GID_TYPE_SYSFS_ROCE_V2, "GID 1 is RoCE v2 (query_gid_type)")
pd = PD(ctx)
mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
mr.write(b"vrdma", 5)
check(mr.read(5, 0) == b"vrdma" and mr.lkey != 0, "MR of 4096 bytes, lkey 0x%x" % mr.lkey)
cq = CQ(ctx, 16)
cqx = CQEX(ctx, CqInitAttrEx(cqe=16, wc_flags=e.IBV_WC_EX_WITH_BYTE_LEN |
                              e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP))
check(cq.cqe >= 16 and cqx is not None, "CQ and extended CQ with timestamps created")
for o in (cqx, cq, mr, pd, ctx):
    o.close()
if failed:
    print("api_pyverbs: FAIL: %d check(s) failed" % failed)
    sys.exit(1)
print("api_pyverbs: PASS")
