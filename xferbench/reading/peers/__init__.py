"""A peer tool's own output as an xferbench result file, so plot, report, compare and fleet show its
figures beside xferbench's from the same machine: NVIDIA's nvbandwidth (`-j`, or its text) and the CUDA
samples' bandwidthTest (`--csv`, or its readable table), AMD's TransferBench (OUTPUT_TO_CSV=1, or its
table) and rocm_bandwidth_test (its matrices, or 2.x's TransferBench presets), read as their sources
print them; a file's content says which form it holds, so output pasted into a bug report imports as it
stands.

One module per tool, registered in PEERS below; what they share is in common.py.
"""

from __future__ import annotations

from xferbench.reading.peers import bandwidthtest, nvbandwidth, rocm_bandwidth_test, transferbench
from xferbench.reading.peers.common import Peer, item_for, json_object

PEERS: dict[str, Peer] = {peer.name: peer for peer in (nvbandwidth.PEER, bandwidthtest.PEER, transferbench.PEER,
                                                        rocm_bandwidth_test.PEER)}  # fmt: skip
# Each peer's own ceiling, host to device, as `fleet` reads it: its copy from pinned memory.
PEER_CEILINGS = {(peer.name, peer.ceiling) for peer in PEERS.values()}
# ...and how to get that figure, for a GPU whose file lacks it: `fleet` leaves such a GPU not judged, saying this.
PEER_CEILING_RUNS = {peer.name: (peer.ceiling, peer.ceiling_run) for peer in PEERS.values()}
read_nvbandwidth = nvbandwidth.read_nvbandwidth
read_bandwidthtest = bandwidthtest.read_bandwidthtest
read_transferbench = transferbench.read_transferbench
read_rocm_bandwidth_test = rocm_bandwidth_test.read_rocm_bandwidth_test

__all__ = ["PEERS", "PEER_CEILINGS", "PEER_CEILING_RUNS", "Peer", "item_for", "json_object", "read_bandwidthtest", "read_nvbandwidth",
           "read_rocm_bandwidth_test", "read_transferbench"]
