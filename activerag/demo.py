"""The shipped demo corpus: an invented world, so the LM cannot answer from memory.

`python -m activerag.demo` regenerates activerag/data/demo_{corpus,questions}.jsonl; the output
is deterministic. The 24 two-hop questions need two facts that stand in different paragraphs;
24 one-hop questions follow them, each answered by one paragraph, so a run can tell a model that
cannot chain two retrievals from one that cannot read a retrieved fact.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
DEMO_CORPUS = DATA / "demo_corpus.jsonl"
DEMO_QUESTIONS = DATA / "demo_questions.jsonl"

_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr",
           "gr", "kr", "tr", "th", "sh", "st", "val", "mor", "sel"]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "ia", "ou"]
_CODAS = ["", "n", "r", "s", "l", "th", "nd", "rk", "m", "x"]
OCCUPATIONS = ["chemist", "architect", "composer", "painter", "novelist", "astronomer",
               "engineer", "botanist", "cartographer", "sculptor", "physician", "poet"]
PRODUCTS = ["glass lenses", "river barges", "clockwork toys", "weaving looms", "solar kilns",
            "paper maps", "brass instruments", "salt crackers", "wind pumps", "ink pigments"]
GENRES = ["drama", "comedy", "documentary", "thriller", "musical", "western"]
LANGUAGES = ["Orvish", "Taleni", "Brusk", "Meravian", "Quolese", "Sundric", "Palthic",
             "Zereni", "Kavish", "Lorran"]


def _word(rng: random.Random, syllables: int) -> str:
    w = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
    return (w + rng.choice(_CODAS)).capitalize()


@dataclass
class World:
    """The invented entities and their facts."""

    countries: list[dict[str, Any]]
    cities: list[dict[str, Any]]
    people: list[dict[str, Any]]
    companies: list[dict[str, Any]]
    films: list[dict[str, Any]]
    rivers: list[dict[str, Any]]


def build_world(seed: int = 7) -> World:
    """Invent countries, cities, rivers, people, companies and films with consistent facts."""
    rng = random.Random(seed)
    used: set[str] = set()

    def name(syllables: int) -> str:
        while True:
            w = _word(rng, syllables)
            if w not in used and len(w) > 3:
                used.add(w)
                return w

    countries: list[dict[str, Any]] = [{"name": name(2) + "ia", "language": LANGUAGES[i],
                  "founded": rng.randint(1400, 1900)} for i in range(10)]
    rivers = [{"name": name(2) + " River", "length": rng.randint(90, 2400)} for _ in range(20)]
    cities: list[dict[str, Any]] = []
    for i in range(40):
        country = countries[i % len(countries)]
        cities.append({"name": name(rng.choice([2, 3])), "country": country["name"],
                       "river": rng.choice(rivers)["name"], "founded": rng.randint(900, 1850),
                       "population": rng.randint(12, 900) * 1000})
    for c in countries:
        c["capital"] = next(x["name"] for x in cities if x["country"] == c["name"])
    people: list[dict[str, Any]] = []
    for _ in range(80):
        born = rng.randint(1820, 1960)
        people.append({"name": f"{name(2)} {name(2)}", "born": born,
                       "died": born + rng.randint(45, 95), "birthplace": rng.choice(cities)["name"],
                       "deathplace": rng.choice(cities)["name"],
                       "occupation": rng.choice(OCCUPATIONS)})
    companies: list[dict[str, Any]] = []
    for _ in range(50):
        founder = rng.choice(people)
        companies.append({"name": f"{name(2)} {rng.choice(['Works', 'Company', 'Guild'])}",
                          "founder": founder["name"], "hq": rng.choice(cities)["name"],
                          "founded": founder["born"] + rng.randint(22, 40),
                          "product": rng.choice(PRODUCTS)})
    films: list[dict[str, Any]] = []
    for _ in range(50):
        director = rng.choice(people)
        title = name(2)
        noun = rng.choice(["Bridge", "Winter", "Garden", "Letter"])
        films.append({"name": f"The {title} {noun}",
                      "director": director["name"], "year": director["born"] + rng.randint(25, 45),
                      "genre": rng.choice(GENRES), "setting": rng.choice(cities)["name"]})
    return World(countries, cities, people, companies, films, rivers)


def paragraphs(world: World) -> list[dict]:
    """One or two paragraphs per entity, each a few sentences of facts."""
    out: list[dict] = []
    for c in world.countries:
        out.append({"title": c["name"], "text": (
            f"{c['name']} is a country whose official language is {c['language']}. "
            f"It was founded in {c['founded']}. Its capital city is {c['capital']}.")})
    for r in world.rivers:
        out.append({"title": r["name"], "text": (
            f"The {r['name']} is a river {r['length']} kilometres long. "
            "It is known for its slow brown water and its many wooden bridges.")})
    for c in world.cities:
        out.append({"title": c["name"], "text": (
            f"{c['name']} is a city in {c['country']}. It lies on the {c['river']} and was "
            f"founded in {c['founded']}. About {c['population']:,} people live there.")})
    for p in world.people:
        out.append({"title": p["name"], "text": (
            f"{p['name']} (born {p['born']}) was a {p['occupation']}. "
            f"{p['name'].split()[0]} was born in the city of {p['birthplace']}.")})
        out.append({"title": p["name"], "text": (
            f"In later life {p['name']} moved to {p['deathplace']}, "
            f"where {p['name'].split()[0]} died in {p['died']}.")})
    for c in world.companies:
        out.append({"title": c["name"], "text": (
            f"{c['name']} is a maker of {c['product']}. It was founded in {c['founded']} by "
            f"{c['founder']}. Its headquarters are in {c['hq']}.")})
    for f in world.films:
        out.append({"title": f["name"], "text": (
            f"{f['name']} is a {f['year']} {f['genre']} film directed by {f['director']}. "
            f"The story is set in {f['setting']}.")})
    return out


def two_hop_questions(world: World, n: int = 24, seed: int = 11) -> list[dict]:
    """Two-hop questions whose two facts stand in different paragraphs."""
    rng = random.Random(seed)
    people = {p["name"]: p for p in world.people}
    cities = {c["name"]: c for c in world.cities}
    makers = [
        lambda c: (f"In which city was the founder of {c['name']} born?",
                   people[c["founder"]]["birthplace"], [c["name"], c["founder"]]),
        lambda c: (f"In which country are the headquarters of {c['name']}?",
                   cities[c["hq"]]["country"], [c["name"], c["hq"]]),
    ]
    film_makers = [
        lambda f: (f"In which year was the director of {f['name']} born?",
                   str(people[f["director"]]["born"]), [f["name"], f["director"]]),
        lambda f: (f"Which river flows through the city where {f['name']} is set?",
                   cities[f["setting"]]["river"], [f["name"], f["setting"]]),
    ]
    first_texts: dict[str, str] = {}
    for para in paragraphs(world):
        first_texts[para["title"]] = first_texts.get(para["title"], "") + " " + para["text"]
    out: list[dict] = []
    asked: set[str] = set()
    for i in range(n):
        # draw again rather than ask a question twice, or one whose first paragraph already
        # names the answer (a company based in its founder's birthplace needs no second hop)
        while True:
            if i % 2 == 0:
                q, a, gold = makers[(i // 2) % 2](rng.choice(world.companies))
            else:
                q, a, gold = film_makers[(i // 2) % 2](rng.choice(world.films))
            if q not in asked and a not in first_texts[gold[0]]:
                asked.add(q)
                break
        out.append({"id": f"demo-{i:02d}", "question": q, "answers": [a], "gold_titles": gold,
                    "hops": 2})
    return out


_OneHop = tuple[list[dict[str, Any]], Callable[[dict[str, Any]], tuple[str, str]]]


def one_hop_questions(world: World, n: int = 24, seed: int = 13) -> list[dict]:
    """One-hop questions, each answered by one paragraph about the entity it names.

    The relations are the single hops the two-hop questions chain, cycled in that order.
    """
    rng = random.Random(seed)
    relations: list[_OneHop] = [
        (world.companies, lambda c: (f"Who founded {c['name']}?", c["founder"])),
        (world.people, lambda p: (f"In which city was {p['name']} born?", p["birthplace"])),
        (world.companies,
         lambda c: (f"In which city are the headquarters of {c['name']}?", c["hq"])),
        (world.cities, lambda c: (f"In which country is the city of {c['name']}?", c["country"])),
        (world.films, lambda f: (f"Who directed {f['name']}?", f["director"])),
        (world.people, lambda p: (f"In which year was {p['name']} born?", str(p["born"]))),
        (world.films, lambda f: (f"In which city is {f['name']} set?", f["setting"])),
        (world.cities, lambda c: (f"Which river flows through {c['name']}?", c["river"])),
    ]
    picks = [rng.sample(pool, math.ceil(n / len(relations))) for pool, _ in relations]
    out: list[dict] = []
    for i in range(n):
        r = i % len(relations)
        entity = picks[r][i // len(relations)]
        q, a = relations[r][1](entity)
        out.append({"id": f"demo-1hop-{i:02d}", "question": q, "answers": [a],
                    "gold_titles": [entity["name"]], "hops": 1})
    return out


def questions(world: World) -> list[dict]:
    """The demo questions: the two-hop ones first, then the one-hop ones."""
    return two_hop_questions(world) + one_hop_questions(world)


def write_demo(data: Path = DATA) -> tuple[int, int]:
    """Write the demo corpus and questions; return their sizes."""
    world = build_world()
    corpus, qs = paragraphs(world), questions(world)
    data.mkdir(parents=True, exist_ok=True)
    (data / DEMO_CORPUS.name).write_text("".join(json.dumps(p) + "\n" for p in corpus))
    (data / DEMO_QUESTIONS.name).write_text("".join(json.dumps(q) + "\n" for q in qs))
    return len(corpus), len(qs)


def load_demo_questions() -> list[dict]:
    """The shipped demo questions: the two-hop ones, then the one-hop ones (field `hops`)."""
    return [json.loads(line) for line in DEMO_QUESTIONS.read_text().splitlines() if line]


if __name__ == "__main__":
    n_paragraphs, n_questions = write_demo()
    print(f"wrote {n_paragraphs} paragraphs and {n_questions} questions")
