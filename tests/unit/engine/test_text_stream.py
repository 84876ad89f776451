from hearth.engine.text_stream import StopMatcher, TextStream, Utf8Stream


def test_utf8_stream_holds_partial_characters():
    data = "héllo 🔥 wörld".encode()
    stream = Utf8Stream()
    pieces = [stream.feed(bytes([b])) for b in data]
    assert "".join(pieces) + stream.flush() == "héllo 🔥 wörld"
    # The four bytes of the emoji produce text only once complete.
    emoji_start = data.index("🔥".encode())
    assert pieces[emoji_start : emoji_start + 3] == ["", "", ""]
    assert pieces[emoji_start + 3] == "🔥"


def test_utf8_stream_matches_whole_decode_on_invalid_bytes():
    data = b"ab\x80cd\xe2\x82xy\xf0\x9f"
    stream = Utf8Stream()
    text = "".join(stream.feed(data[i : i + 1]) for i in range(len(data))) + stream.flush()
    assert text == data.decode("utf-8", errors="replace")


def test_stop_matcher_holds_back_possible_prefix():
    matcher = StopMatcher(("</end>",))
    assert matcher.feed("hello </e").text == "hello "
    result = matcher.feed("nd> tail")
    assert result.stopped and result.text == ""


def test_stop_matcher_releases_false_alarm():
    matcher = StopMatcher(("STOP",))
    assert matcher.feed("ST").text == ""
    assert matcher.feed("ART").text == "START"
    assert matcher.feed("xx S").text == "xx "
    assert matcher.flush() == "S"


def test_stop_matcher_earliest_of_several_stops():
    result = StopMatcher(("bb", "a")).feed("xxbbya")
    assert result.stopped and result.text == "xx" and result.stop == "bb"


def test_text_stream_stop_split_across_multibyte_tokens():
    stream = TextStream(("é!",))
    out = stream.feed(b"ab\xc3")
    out += stream.feed(b"\xa9")
    assert not stream.stopped
    assert stream.stop_hit is None
    out += stream.feed(b"!zz")
    assert stream.stopped and stream.stop_hit == "é!"
    assert out == "ab"


def test_text_stream_finish_flushes_held_text():
    stream = TextStream(("xyz",))
    assert stream.feed(b"abcxy") == "abc"
    assert stream.finish() == "xy"
    assert stream.stop_hit is None
