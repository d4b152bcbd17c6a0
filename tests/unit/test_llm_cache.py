import pytest

from veracity.llm.base import CacheMiss, LLMRequest, LLMResponse, TokenUsage, user
from veracity.llm.cache import ResponseCache


def _req(text="hi", temperature=0.0, tag=""):
    return LLMRequest(messages=[user(text)], temperature=temperature, tag=tag)


def _resp(text):
    return LLMResponse(text=text, usage=TokenUsage(prompt_tokens=3, completion_tokens=1), model="m")


def test_auto_mode_caches_deterministic_requests_only(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite", mode="auto")
    cache.put(_req(), "b", _resp("A"))
    cache.put(_req(temperature=0.7), "b", _resp("B"))
    hit = cache.get(_req(), "b")
    assert hit is not None and hit.text == "A" and hit.cached
    assert cache.get(_req(temperature=0.7), "b") is None
    assert len(cache) == 1


def test_key_ignores_tag_and_surrounding_whitespace_but_not_backend(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put(_req("  hi \n", tag="judge"), "b", _resp("A"))
    assert cache.get(_req("hi", tag="other"), "b").text == "A"
    assert cache.get(_req("hi"), "another-backend") is None


def test_record_then_replay_reproduces_sampled_sequence(tmp_path):
    path = tmp_path / "c.sqlite"
    rec = ResponseCache(path, mode="record")
    for text in ("s1", "s2", "s3"):
        rec.put(_req(temperature=1.0), "b", _resp(text))
    rec.close()
    replay = ResponseCache(path, mode="replay")
    got = [replay.get(_req(temperature=1.0), "b").text for _ in range(3)]
    assert got == ["s1", "s2", "s3"]
    with pytest.raises(CacheMiss, match="occurrence 3"):
        replay.get(_req(temperature=1.0), "b")


def test_replay_miss_raises_and_never_writes(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite", mode="replay")
    with pytest.raises(CacheMiss):
        cache.get(_req("never seen"), "b")
    cache.put(_req("never seen"), "b", _resp("x"))
    assert len(cache) == 0


def test_off_mode_and_bad_mode(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite", mode="off")
    cache.put(_req(), "b", _resp("A"))
    assert cache.get(_req(), "b") is None
    with pytest.raises(ValueError, match="unknown cache mode"):
        ResponseCache(tmp_path / "c.sqlite", mode="sometimes")  # type: ignore[arg-type]


def test_cache_persists_across_instances(tmp_path):
    ResponseCache(tmp_path / "c.sqlite").put(_req(), "b", _resp("A"))
    assert ResponseCache(tmp_path / "c.sqlite").get(_req(), "b").text == "A"
