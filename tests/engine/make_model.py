"""Make the engine tier's tiny Llama in DIR, offline: a byte-level BPE of 2,048 tokens trained on
the project's own fixture logs, and a 2-layer, 128-wide LlamaForCausalLM with random weights
(seed 0). Run with the engine venv's python (it has transformers and tokenizers):

    python make_model.py DIR

The weights are random: the model answers gibberish, which is all a boot, a stats line or a
streamed completion needs. max_position_embeddings is 2,048 so that `--max-model-len 8192` is the
engine's own start-up error, not ours.
"""

from __future__ import annotations

import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "logs"
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def texts() -> list[str]:
    # sorted: the same files in the same order give the same vocabulary on every machine
    return [p.read_text(errors="replace") for p in sorted(FIXTURES.glob("*.log"))[:40]]


def main(out: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<s>", "</s>", "<unk>"]
    tok.train_from_iterator(
        texts(),
        trainers.BpeTrainer(
            vocab_size=2048, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    fast.chat_template = CHAT_TEMPLATE
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=0,
        eos_token_id=1,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    fast.save_pretrained(out)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
