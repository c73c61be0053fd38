"""A filter syntax error's reason reaches the page as a `rag.text.Text`, and the page shows it in Chinese."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from rag.errors import FilterSyntaxError
from rag.query.filters import parse
from rag.text import Text
from ui.zh import ZH


def test_a_filter_error_reason_is_text_with_its_chinese() -> None:
    with pytest.raises(FilterSyntaxError) as caught:
        parse("year >")
    reason = caught.value.reason
    assert isinstance(reason, Text) and reason == "expected a value after '>'"  # the English as before
    assert reason.template in ZH and caught.value.args[0].template in ZH

    script = (
        "from rag.errors import FilterSyntaxError\nfrom rag.query.filters import parse\n"
        "from ui.i18n import tr\nimport streamlit as st\n"
        "try:\n    parse('year >')\nexcept FilterSyntaxError as exc:\n    st.write(tr(exc.reason))\n"
        "try:\n    parse('a in []')\nexcept FilterSyntaxError as exc:\n    st.write(tr(exc.reason))\n"
    )
    at = AppTest.from_string(script)
    at.query_params["lang"] = "zh"
    at.run()
    assert [m.value for m in at.markdown] == ["'>' 之后应为值", "列表为空；请至少给出一个值"]
    at.query_params["lang"] = "en"
    at.run()
    assert [m.value for m in at.markdown] == ["expected a value after '>'", "empty list; give at least one value"]
