"""The optional LLM pass (step ``llm``, ``processors/llm/step.py``) and the project's one LLM client
(``processors/llm/client.py``, also used by the judge panel)."""
