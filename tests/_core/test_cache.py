"""BytesLRU: the bounded cache behind the tuner's reused shuffles and bootstrap draws."""

from __future__ import annotations

from metrickit._core.cache import BytesLRU


def test_keeps_within_its_bytes_dropping_the_least_recently_used():
    cache: BytesLRU[bytes] = BytesLRU(10, len)
    cache.keep("a", b"1234")
    cache.keep("b", b"1234")
    assert cache.hit("a") == b"1234"  # "a" is now the most recently used
    cache.keep("c", b"1234")  # 12 bytes: "b" goes
    assert list(cache) == ["a", "c"] and cache.hit("b") is None
    cache.keep("a", b"123456")  # replaced, not counted twice: 10 bytes
    assert list(cache) == ["c", "a"]
    cache.keep("big", b"x" * 11)  # larger than the whole cache: not kept, nothing dropped
    assert list(cache) == ["c", "a"]
    cache.clear()
    cache.keep("d", b"x" * 10)
    assert list(cache) == ["d"]
