"""The price table the conf ships (llm.prices), and the budget's refusal of a model it cannot price."""

from __future__ import annotations

import pytest

from mnemetric.config import compose
from mnemetric.errors import ConfigError
from mnemetric.llm.budget import Budget, PriceTable


@pytest.fixture(scope="module")
def prices() -> PriceTable:
    return PriceTable.from_dict(compose([], "conf")["llm"]["prices"])


def test_the_official_v2_models_are_priced(prices):
    """LongMemEval-V2's official checker and reader (conf/config.yaml says where each price comes from)."""
    assert prices.get("gpt-5.2").input_per_1m == 1.75 and prices.get("gpt-5.2").output_per_1m == 14.0
    assert prices.get("gpt-5.2").batch_discount == 0.5
    assert prices.get("gpt-5.2-2025-12-11") is prices.get("gpt-5.2")  # a resolved snapshot name, by prefix
    assert prices.get("gpt-5.2-pro").output_per_1m == 168.0  # never the cheaper gpt-5.2 by prefix
    qwen = prices.get("Qwen/Qwen3.5-9B")
    assert (qwen.input_per_1m, qwen.output_per_1m) == (0.05, 0.15)
    Budget(max_usd=50.0).reserve("Qwen/Qwen3.5-9B", qwen.cost(1000, 20_000))  # admitted


def test_an_unpriced_model_under_max_usd_names_the_conf_key_and_the_override():
    with pytest.raises(ConfigError) as info:
        Budget(max_usd=50.0).reserve("some/model-1.5", None)
    text = str(info.value)
    assert "no price for model 'some/model-1.5' but max_usd=50.0 is set" in text
    assert "llm.prices in conf/config.yaml" in text and "-S llm.budget.max_usd=null" in text
    override = text.split("-S '")[1].split("'")[0]
    assert override == "++llm.prices={some/model-1.5: {input: <$>, output: <$>}}"
    filled = override.replace("<$>", "1.0")  # the override as printed composes, merged into the table
    composed = compose([filled], "conf")["llm"]["prices"]
    assert composed["some/model-1.5"]["input"] == 1.0 and "gpt-5.2" in composed
    assert compose(["llm.budget.max_usd=null"], "conf")["llm"]["budget"]["max_usd"] is None
