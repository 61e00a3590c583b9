"""A cluster CIDR cut into equal node subnets, each free or used (upstream:
pkg/controller/nodeipam/ipam/cidrset/cidr_set.go).

`allocate_next` hands out the next free subnet after the last one handed out (round robin, so a subnet just
released is not reused at once); `occupy` marks subnets a node already has; `release` frees them.
"""

from __future__ import annotations

import ipaddress

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# Upstream refuses more than 2^16 node subnets in one cluster CIDR.
CLUSTER_SUBNET_MAX_DIFF = 16


class CIDRSetError(Exception):
    pass


class NoCIDRsRemaining(CIDRSetError):
    def __init__(self) -> None:
        super().__init__("CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range")


class CIDRSet:
    def __init__(self, cluster_cidr: IPNetwork, subnet_mask_size: int) -> None:
        if subnet_mask_size < cluster_cidr.prefixlen or subnet_mask_size > cluster_cidr.max_prefixlen:
            raise CIDRSetError(
                f"node CIDR mask size {subnet_mask_size} does not fit in the cluster CIDR {cluster_cidr}"
            )
        if subnet_mask_size - cluster_cidr.prefixlen > CLUSTER_SUBNET_MAX_DIFF:
            raise CIDRSetError("New CIDR set failed; the node CIDR size is too big")
        self.cluster_cidr = cluster_cidr
        self.subnet_mask_size = subnet_mask_size
        self.max_cidrs = 1 << (subnet_mask_size - cluster_cidr.prefixlen)
        self._used = bytearray(self.max_cidrs)
        self.allocated = 0
        self.next_candidate = 0
        self._step = 1 << (cluster_cidr.max_prefixlen - subnet_mask_size)
        self._base = int(cluster_cidr.network_address)

    def _subnet(self, index: int) -> IPNetwork:
        addr = ipaddress.ip_address(self._base + index * self._step)
        return ipaddress.ip_network(f"{addr}/{self.subnet_mask_size}")

    def allocate_next(self) -> IPNetwork:
        if self.allocated == self.max_cidrs:
            raise NoCIDRsRemaining()
        candidate = self.next_candidate
        for _ in range(self.max_cidrs):
            if not self._used[candidate]:
                self._used[candidate] = 1
                self.allocated += 1
                self.next_candidate = (candidate + 1) % self.max_cidrs
                return self._subnet(candidate)
            candidate = (candidate + 1) % self.max_cidrs
        raise NoCIDRsRemaining()

    def _indices(self, cidr: IPNetwork) -> range:
        """The subnets `cidr` covers (all of them if it holds the cluster CIDR); empty if outside it."""
        if cidr.version != self.cluster_cidr.version or not cidr.overlaps(self.cluster_cidr):
            return range(0)
        start = max(int(cidr.network_address), self._base)
        end = min(int(cidr.broadcast_address), int(self.cluster_cidr.broadcast_address))
        return range((start - self._base) // self._step, (end - self._base) // self._step + 1)

    def occupy(self, cidr: IPNetwork) -> None:
        for i in self._indices(cidr):
            if not self._used[i]:
                self._used[i] = 1
                self.allocated += 1

    def release(self, cidr: IPNetwork) -> None:
        for i in self._indices(cidr):
            if self._used[i]:
                self._used[i] = 0
                self.allocated -= 1

    def is_used(self, cidr: IPNetwork) -> bool:
        indices = self._indices(cidr)
        return bool(indices) and all(self._used[i] for i in indices)
