"""The bundled sample: data/sample/longmemeval_sample.json, 43 questions over all six types.

``generate_sample(seed)`` is deterministic: one master ``random.Random(seed)`` shuffles the plan and
seeds one ``random.Random`` per instance; question and session ids are unique across the file. With
the default seed the serialised bytes are pinned (sha256 in conf/variant/sample.yaml and
data/sample/README.md; ``mnemetric sample --check`` verifies them).
"""

from __future__ import annotations

import random

from mnemetric.longmemeval.instance import Instance
from mnemetric.longmemeval.sample.banks import load_banks
from mnemetric.longmemeval.sample.haystack import Profile, Spec, build_instance
from mnemetric.longmemeval.sample.questions import GPT4_TYPES, default_scenarios

DEFAULT_SEED = 20241014
SAMPLE_PROFILE = Profile(sessions=(12, 16), exchanges=(2, 2, 2, 2, 2, 3, 3, 3, 4, 5, 6), span_days=(24, 60),
                         max_turns=12)
SAMPLE_PLAN = (
    # (question_type, plain questions, abstention questions)
    ("single-session-user", 6, 2),
    ("single-session-assistant", 6, 0),
    ("single-session-preference", 6, 0),
    ("temporal-reasoning", 6, 2),
    ("knowledge-update", 6, 1),
    ("multi-session", 6, 2),
)


def sample_specs(rng: random.Random) -> list[Spec]:
    """The plan as specs, shuffled: plain questions take the type's scenarios in turn, abstentions its
    abstaining scenarios in turn; the first temporal abstention carries the same-day date quirk."""
    scenarios = default_scenarios()
    specs = []
    for qtype, n_plain, n_abs in SAMPLE_PLAN:
        plain = scenarios[qtype]
        abstaining = [s for s in plain if s.abstains]
        for i in range(n_plain + n_abs):
            abstain = i >= n_plain
            scenario = abstaining[(i - n_plain) % len(abstaining)] if abstain else plain[i % len(plain)]
            gpt4 = qtype in GPT4_TYPES and rng.random() < 0.5
            quirk = qtype == "temporal-reasoning" and i == n_plain
            specs.append(Spec(qtype, scenario, abstain, gpt4, quirk))
    rng.shuffle(specs)
    return specs


def generate_sample(seed: int = DEFAULT_SEED) -> list[Instance]:
    """The bundled sample: 43 instances covering all six types, 7 of them abstentions."""
    banks = load_banks()
    master = random.Random(seed)
    used: set[str] = set()
    return [build_instance(random.Random(master.getrandbits(64)), banks, spec, SAMPLE_PROFILE, used)
            for spec in sample_specs(master)]
