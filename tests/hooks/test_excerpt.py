"""A recalled row cut to the sentences that bear on the prompt (`hooks/excerpt.py`): pure functions,
tested on plain strings."""

from __future__ import annotations

from bli_memory.hooks.excerpt import ELLIPSIS, Prompt, answer_scores, excerpt, stem, units, words

EXCHANGE = (
    "User: Our deploys keep failing on Mondays and I am tired of it. Can you look at the pipeline?\n\n"
    "Assistant: I read the last ten runs of `deploy.yml`. The runner image was rebuilt every weekend, "
    "so the cache was cold on Monday. Staging now syncs every 5 minutes from the main branch through "
    "Flux. I also renamed two jobs for clarity. The lint step is unchanged."
)


def test_units_keep_code_blocks_bullets_and_table_rows_whole_and_split_prose_into_sentences() -> None:
    text = (
        "Fixed it. See foo.py and v0.2.83 for details, e.g. the `a. b` span.\n"
        "- first bullet. Still the first bullet.\n"
        "2) a numbered step. Same step.\n"
        "| col | a. b |\n"
        "```python\n"
        "x = 1.  # not a sentence end\n"
        "print(x)\n"
        "```\n"
        "Done! Really?"
    )
    assert units(text) == [
        "Fixed it.",
        "See foo.py and v0.2.83 for details, e.g. the `a. b` span.",
        "- first bullet. Still the first bullet.",
        "2) a numbered step. Same step.",
        "| col | a. b |",
        "```python x = 1.  # not a sentence end print(x) ```",
        "Done!",
        "Really?",
    ]
    assert units("```\nnever closed\nfence") == ["``` never closed fence"]
    assert units("") == [] and units("\n\n") == []


def test_words_are_lower_cased_stemmed_and_without_stopwords() -> None:
    assert stem("hosts") == "host" and stem("class") == "class" and stem("status") == "status"
    assert stem("its") == "its" and stem("analysis") == "analysis"
    assert words("Which hosts does the PHX_HOST setting drive?") == {"host", "phx", "setting", "drive"}


def test_a_short_text_is_shown_whole_and_flat() -> None:
    prompt = Prompt("anything at all")
    assert excerpt("one line\n\ntwo   lines", prompt, 100) == "one line two lines"


def test_a_stored_exchange_is_shown_by_the_sentence_that_answers_the_prompt() -> None:
    prompt = Prompt("how often does staging sync from the main branch?")
    cut = excerpt(EXCHANGE, prompt, 140)
    assert (
        cut
        == "… Staging now syncs every 5 minutes from the main branch through Flux. I also renamed two jobs for…"
    )
    assert len(cut) <= 140
    assert "Mondays" not in cut


def test_kept_sentences_stay_in_their_order_with_an_ellipsis_for_each_gap() -> None:
    text = "Alpha builds run nightly. Nothing here. Nothing there either. Beta tests run hourly. Tail."
    cut = excerpt(text, Prompt("when do beta tests and alpha builds run?"), 60)
    assert cut == "Alpha builds run nightly." + ELLIPSIS + "Beta tests run hourly. …"


def test_a_question_passes_its_score_to_the_answer_after_it() -> None:
    pieces = ["Who reviews changes to the fee table?", "Priya leads fee logic.", "Unrelated."]
    assert answer_scores(pieces, Prompt("who reviews fee table changes?")) == [0, 5, 0]
    text = " ".join(pieces) + " More filler text that is not about anything in the prompt at all."
    cut = excerpt(text, Prompt("who reviews fee table changes?"), 40)
    assert cut.startswith("… Priya leads fee logic.")


def test_an_identifier_of_the_prompt_outweighs_shared_plain_words() -> None:
    text = "The deploy config for staging lives in one file. The PHX_HOST variable sets the origin."
    cut = excerpt(text, Prompt("where is the deploy config for PHX_HOST?"), 60)
    assert cut == "… The PHX_HOST variable sets the origin."


def test_a_row_sharing_no_word_with_the_prompt_keeps_its_first_sentence() -> None:
    text = "Lunch is at noon on Fridays. The office closes early in August. Parking is free."
    cut = excerpt(text, Prompt("what is the retry budget of the payment webhook?"), 40)
    assert cut.startswith("Lunch is at noon on Fridays.") and cut.endswith("…")


def test_a_best_sentence_longer_than_the_budget_is_shown_by_a_window_around_the_match() -> None:
    long = "Filler words " * 30 + "and the retry budget is 7 attempts " + "more filler " * 30 + "end."
    cut = excerpt("Intro. " + long, Prompt("what is the retry budget?"), 80)
    assert "retry budget is 7 attempts" in cut
    assert cut.startswith("… ") and cut.endswith(" …") and len(cut) <= 80


def test_the_excerpt_never_exceeds_its_limit_and_is_deterministic() -> None:
    prompt = Prompt("how often does staging sync from the main branch through Flux?")
    for limit in range(20, len(EXCHANGE) + 10, 7):
        cut = excerpt(EXCHANGE, prompt, limit)
        assert len(cut) <= limit, limit
        assert cut == excerpt(EXCHANGE, prompt, limit)


def test_a_short_answer_ends_its_sentence_but_an_abbreviation_does_not() -> None:
    assert units("No. The cache stays. Use e.g. Redis vs. Memcached. Ok.") == [
        "No.",
        "The cache stays.",
        "Use e.g. Redis vs. Memcached.",
        "Ok.",
    ]
