"""What FB-RAG's nodes run with: the strong reader and the store (as every family has them)
and the light sampler, each given to the builder or made from the run's context, and the
light sampler's prompt layout."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from activerag.nodes.fb_rag.context import FBRagContext
from activerag.nodes.parts import Parts, _lm
from activerag.nodes.prompts import Layout
from activerag.serving import cache
from activerag.serving.token_lm import VLLMTokens


@dataclass
class FBParts:
    """The strong reader and the store (`strong`, as every family has them) and the light
    sampler; whatever is None is made from the run's context."""

    strong: Parts = field(default_factory=Parts)
    light: Any = None
    """A Sampler that can also tokenize (VLLMTokens; the tests' scripted one)."""

    async def light_for(self, ctx: FBRagContext) -> Any:
        if self.light is not None:
            return self.light
        key = ("light", ctx.light_base_url, ctx.light_model)
        if key not in self.strong.memo:
            model = ctx.light_model or (await asyncio.to_thread(
                _lm, ctx.light_base_url, "", None)).model
            light: Any = VLLMTokens(ctx.light_base_url, model)
            cache_file = cache.samples_active()
            if cache_file is not None:
                light = cache.CachedSampler(light, cache_file)
            self.strong.memo.setdefault(key, light)
        return self.strong.memo[key]


async def light_layout(parts: FBParts, ctx: FBRagContext) -> Layout:
    """The light sampler's prompt layout: auto is its own server's template."""
    if ctx.light_prompt_format != "auto":
        return ctx.light_prompt_format
    if parts.light is not None:  # a sampler of its own (scripted): its layout, else ChatML
        return getattr(parts.light, "chat_layout", None) or "chatml"
    light = await parts.light_for(ctx)
    return await parts.strong.layout_for(ctx, "auto", ctx.light_base_url, light.model)
