"""Test shapes drawn per evaluation under the secret seed, so a kernel cannot special-case the test set.

A task declares, beside its public test shapes, ranges for its dimensions (or a list of allowed
values where a dimension must be, say, a multiple of the head size), how many shapes to draw and
a cap on their size. Each drawn dimension is, with fixed odds, an edge (1 or the range's low end),
the range's top, a prime, or an odd number: odd sizes are non-multiples of every power-of-two block
size, primes of every block size at all. A task may also declare adversarial input families: one
more shape is drawn for each, marked with `family`, which the task's `make_inputs` reads.
"""
from __future__ import annotations

import dataclasses
import math
import random

# (kind, odds): an edge, the top of the range, a prime, an odd number
KINDS = (("edge", 0.15), ("top", 0.15), ("prime", 0.35), ("odd", 0.35))
REDRAWS = 16


def is_prime(n: int) -> bool:
    if n < 2:
        return False
    return all(n % p for p in range(2, math.isqrt(n) + 1))


def _value(rng: random.Random, lo: int, hi: int) -> int:
    kind = rng.choices([k for k, _ in KINDS], weights=[w for _, w in KINDS])[0]
    if kind == "edge" or lo == hi:
        return rng.choice((1, lo)) if lo <= 1 else lo
    if kind == "top":
        return hi
    start = rng.randint(lo, hi)
    if kind == "prime":
        for n in list(range(start, hi + 1)) + list(range(start - 1, lo - 1, -1)):
            if is_prime(n):
                return n
        return start
    return start | 1 if (start | 1) <= hi else max(lo, start - 1 if start % 2 == 0 else start)


@dataclasses.dataclass(frozen=True)
class Dims:
    """Where each drawn dimension comes from, and the most elements one drawn shape may have
    (the product of its integer dimensions)."""
    ranges: dict  # name -> (lo, hi)
    choices: dict  # name -> tuple of allowed values
    count: int
    max_elements: int

    def draw_one(self, rng: random.Random) -> dict:
        shape = {}
        for name, (lo, hi) in self.ranges.items():
            shape[name] = _value(rng, lo, hi)
        for name, values in self.choices.items():
            shape[name] = rng.choice(values)
        # over the cap: halve the largest ranged dimension until it fits (the kind of each
        # value is lost then, the size bound is what matters)
        while math.prod(shape.values()) > self.max_elements:
            free = [n for n in self.ranges if shape[n] > self.ranges[n][0]]
            if not free:
                break
            big = max(free, key=lambda n: shape[n])
            shape[big] = max(self.ranges[big][0], shape[big] // 2 | 1)
        return shape


@dataclasses.dataclass(frozen=True)
class Hidden:
    """A task's hidden test shapes: `gpu` and `cpu` say how to draw them on each kind of device."""
    gpu: Dims
    cpu: Dims
    families: tuple[str, ...] = ()
    order: tuple[str, ...] = ()  # the dimensions' order in a shape (the public shapes' order)

    def summary(self) -> dict:
        """What the site says of them: how many shapes a GPU evaluation draws, which families."""
        return {"count": self.gpu.count, "families": list(self.families)}

    def draw(self, seed: int, device: str, avoid=()) -> list[dict]:
        """`count` shapes, then one per family. A shape in `avoid` (the public ones) or drawn
        before is drawn again, a few times at most: a repeat tests nothing new, and narrow ranges
        may leave no other choice."""
        dims = self.gpu if device == "cuda" else self.cpu
        rng = random.Random(seed)
        seen = [dict(s) for s in avoid]
        shapes = []
        for family in [None] * dims.count + list(self.families):
            for _ in range(REDRAWS):
                shape = dims.draw_one(rng)
                if shape not in seen:
                    break
            seen.append(shape)
            shapes.append({**shape, "family": family} if family else shape)
        return [self._ordered(s) for s in shapes]

    def _ordered(self, shape: dict) -> dict:
        keys = [k for k in self.order if k in shape] + [k for k in shape if k not in self.order]
        return {k: shape[k] for k in keys}


def parse_dims(table: dict, where: str) -> tuple[dict, dict]:
    """`{"M": [1, 4096], "D": {"choices": [128, 256]}}` -> (ranges, choices), checked."""
    ranges, choices = {}, {}
    for name, spec in table.items():
        if isinstance(spec, dict) and set(spec) == {"choices"}:
            values = tuple(spec["choices"])
            if not values or not all(isinstance(v, int) and v >= 1 for v in values):
                raise ValueError(f"{where}: {name}.choices must be positive integers")
            choices[name] = values
        elif (isinstance(spec, (list, tuple)) and len(spec) == 2 and all(isinstance(v, int) for v in spec)
              and 1 <= spec[0] <= spec[1]):
            ranges[name] = (int(spec[0]), int(spec[1]))
        else:
            raise ValueError(f"{where}: {name} must be [low, high] (1 <= low <= high) or {{choices = [...]}}")
    return ranges, choices


def from_table(table: dict, where: str, order=()) -> Hidden:
    """The `[hidden]` table of a task manifest (docs/tasks.md)."""
    def dims(t: dict, base: Dims | None, label: str) -> Dims:
        known = {"dims", "count", "max_elements", "families", "cpu"}
        extra = set(t) - known
        if extra:
            raise ValueError(f"{label}: unknown keys {sorted(extra)}")
        if "dims" in t:
            ranges, choices = parse_dims(t["dims"], f"{label}.dims")
        else:
            ranges, choices = (dict(base.ranges), dict(base.choices)) if base else ({}, {})
        if base:  # the CPU table overrides the dimensions it names
            ranges = {**base.ranges, **ranges}
            choices = {**{k: v for k, v in base.choices.items() if k not in ranges}, **choices}
            ranges = {k: v for k, v in ranges.items() if k not in choices}
        count = t.get("count", base.count if base else 3)
        cap = t.get("max_elements", base.max_elements if base else 1 << 22)
        if not isinstance(count, int) or not 0 <= count <= 16:
            raise ValueError(f"{label}: count must be an integer 0..16")
        if not isinstance(cap, int) or cap < 1:
            raise ValueError(f"{label}: max_elements must be a positive integer")
        return Dims(ranges, choices, count, cap)

    gpu = dims(table, None, where)
    cpu = dims(table.get("cpu", {}), gpu, f"{where}.cpu")
    families = tuple(table.get("families", ()))
    if not all(isinstance(f, str) and f for f in families):
        raise ValueError(f"{where}: families must be names")
    return Hidden(gpu, cpu, families, tuple(order))
