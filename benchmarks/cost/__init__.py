"""What a method or component costs: LM calls, tokens, seconds, memory, start-up."""
