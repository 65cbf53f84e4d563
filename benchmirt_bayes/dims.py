"""Names of the two axes of every response matrix, shared by all layers."""

LLM_DIM = "llm"
ITEM_DIM = "item"
