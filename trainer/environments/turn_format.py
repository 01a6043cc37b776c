"""How an environment's reply is framed between two model turns, as text that is tokenised and appended.

The framing is the chat template's, written out once per format instead of re-rendering the conversation: the
trajectory must hold the exact tokens the model generated, and re-rendering a conversation and tokenising it again
can give other ids (a dropped end-of-turn token, a BPE merge across the boundary of two messages).

The framing is tokenised with special tokens recognised (``<|im_end|>`` is one token); the reply's own text
(tool results, the environment's message) with them split (``split_special_tokens``), so a tool result that
prints ``<|im_start|>`` cannot forge a turn.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TurnFormat:
    """The text around an environment reply.

    ``close_model_turn`` is appended first when the model's turn ended without its end-of-turn token (at a stop
    string such as ``</tool_call>``, or at a token limit); ``before_reply`` and ``after_reply`` wrap the reply, and
    ``after_reply`` also opens the model's next turn.
    """

    close_model_turn: str
    before_reply: str
    after_reply: str


# Plain-text models (the built-in tiny models): the reply on its own lines.
PLAIN = TurnFormat(close_model_turn="", before_reply="\n", after_reply="\n")

# ChatML (Qwen, Hermes): the reply as a user message (Qwen's template renders tool results as a user message
# holding <tool_response> blocks), then the assistant's next turn opened.
CHATML = TurnFormat(
    close_model_turn="<|im_end|>",
    before_reply="\n<|im_start|>user\n",
    after_reply="<|im_end|>\n<|im_start|>assistant\n",
)

TURN_FORMATS = {"plain": PLAIN, "chatml": CHATML}
