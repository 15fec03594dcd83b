"""How the reload is fitted to a push: which layers compute their tensors, which parameters are tied, what a folder
feeds (no engine here: the real reload is checked in test_inference.py and tests/learner/test_weight_sync.py)."""

from __future__ import annotations

import torch
from torch import nn

from rollout_workers.vllm_reload import checkpoint_names, checkpoint_tensors, computed_layers, tied_parameters
from rollout_workers.weight_format import write_folder


class Table(nn.Module):
    """Like a rotary embedding: a table it computes itself, never saved."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cos_sin", torch.randn(8, 4), persistent=False)


class Running(nn.Module):
    """A persistent buffer is saved with the model, so a checkpoint must fill it."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(4))


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.rotary = Table()
        self.stats = Running()
        self.proj = nn.Linear(4, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight  # tied, as with tie_word_embeddings


def test_computed_layers_and_tied_parameters():
    model = Tiny()
    assert [name for name, _ in computed_layers(model)] == ["rotary"]
    assert tied_parameters(model) == {"head.weight": "embed.weight"}
    model.head.weight = nn.Parameter(torch.randn(10, 4))
    assert tied_parameters(model) == {}


def test_a_folder_feeds_a_tied_head_the_embedding_sent_once(tmp_path):
    model = Tiny()
    write_folder(model.state_dict(), tmp_path, shard_bytes=64)
    assert len(list(tmp_path.glob("*.safetensors"))) > 1
    # the tied head goes once, under the embedding's name; non-persistent buffers are not in a state_dict
    assert checkpoint_names(tmp_path) == {"embed.weight", "stats.mean", "proj.weight", "proj.bias"}
    fed = list(checkpoint_tensors(tmp_path, {"head.weight": "embed.weight"}))
    names = [n for n, _ in fed]
    assert sorted(names) == ["embed.weight", "head.weight", "proj.bias", "proj.weight", "stats.mean"]
    assert names.index("head.weight") == names.index("embed.weight") + 1  # right after its source
    tensors = dict(fed)
    assert (
        torch.equal(tensors["head.weight"], model.embed.weight)
        and tensors["head.weight"] is tensors["embed.weight"]
    )
