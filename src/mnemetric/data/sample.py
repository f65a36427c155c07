"""Deterministic generator of Mnemetric's bundled sample in the exact LongMemEval (V1) schema.

Everything here is authored by Mnemetric: no upstream text is used. Instances follow the upstream
instance schema and id conventions (shared/docs/upstream-protocol.md §1.2): question_id,
question_type, question, answer, question_date and the parallel lists haystack_session_ids /
haystack_dates / haystack_sessions, plus answer_session_ids (the haystack ids containing "answer").
Turns inside answer sessions carry has_answer (true on the evidence turn, false elsewhere); filler
turns carry no has_answer key. Dates use "%Y/%m/%d (%a) %H:%M" with English weekday names.

Text comes from module-level phrase banks by slot filling, driven only by ``random.Random(seed)``
(no network, no models), so one seed always gives byte-identical JSON. Evidence turns share
vocabulary with their question; filler sessions are drawn from topics the question does not use.

    python -m mnemetric.data.sample --out data/sample/longmemeval_sample.json
    python -m mnemetric.data.sample --synthetic 500 --sessions 48 --out /tmp/synthetic.json
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import string
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, NamedTuple

from ..io import atomic_open, sha256_file

DEFAULT_SEED = 20241014
DEFAULT_OUT = os.path.join("data", "sample", "longmemeval_sample.json")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
NOT_ENOUGH = "The information provided is not enough. "
FIRST_DAY = date(2023, 1, 2)

# ---------------------------------------------------------------------------------------------
# Topic banks: everyday dialogue used for filler sessions and around evidence turns.
# Each topic has slot values and (user, assistant) exchange templates.

TOPICS: dict[str, dict[str, Any]] = {
    "recipes": {
        "slots": {
            "dish": ["lentil soup", "black bean chili", "shakshuka", "vegetable curry",
                     "lemon risotto", "chicken tacos", "mushroom pasta", "miso ramen"],
            "ingredient": ["chickpeas", "spinach", "sweet potatoes", "feta", "quinoa", "zucchini",
                           "coconut milk", "black beans"],
            "people": ["two", "four", "six", "ten"],
        },
        "pairs": [
            ("Can you give me a simple recipe for {dish}?",
             "Sure. Saute onion and garlic, add the main ingredients, season well and simmer until "
             "everything is tender. It takes about forty minutes from start to finish."),
            ("What can I cook tonight with {ingredient} and rice?",
             "Try a quick stir-fry: cook the rice, brown the {ingredient} with garlic and soy sauce, "
             "then toss everything together with a squeeze of lime."),
            ("How do I scale a {dish} recipe to serve {people} people?",
             "Multiply each ingredient by the same factor, but add salt and spices gradually and "
             "taste as you go, since they don't always scale evenly."),
            ("Is it okay to freeze leftover {dish}?",
             "Yes, it usually freezes well for up to three months. Cool it quickly, store it in "
             "airtight containers and reheat it gently."),
            ("What's a good substitute for {ingredient}?",
             "It depends on the role it plays in the dish, but matching the texture matters most. "
             "Tell me the recipe and I can suggest a closer swap."),
            ("Any tips for making my {dish} taste less bland?",
             "Layer the flavors: toast your spices, finish with something acidic like lemon juice, "
             "and add fresh herbs right before serving."),
            ("How long does cooked {ingredient} keep in the fridge?",
             "Usually three to five days in a sealed container. If it smells off, throw it out."),
        ],
    },
    "travel": {
        "slots": {
            "city": ["Lisbon", "Montreal", "Edinburgh", "Seville", "Vancouver", "Prague",
                     "Melbourne", "Krakow"],
            "days": ["three", "four", "five", "seven"],
            "month": ["March", "May", "September", "October"],
        },
        "pairs": [
            ("I have {days} days in {city}. What should I prioritize?",
             "Pick one neighborhood per day, pair one big sight with time to wander, and leave an "
             "afternoon free for whatever you discover."),
            ("Is {month} a good time to visit {city}?",
             "{month} is usually pleasant there, with smaller crowds than peak season. Pack layers, "
             "because evenings can be cool."),
            ("How do I get around {city} without a car?",
             "Public transit and walking cover most central areas. A multi-day transit pass is often "
             "cheaper than buying single tickets."),
            ("What should I pack for a {days}-day trip with only a carry-on?",
             "Stick to a small color palette, roll your clothes, bring one pair of comfortable shoes "
             "and plan to do laundry once."),
            ("Any tips for dealing with jet lag?",
             "Shift your sleep an hour a day before you leave, get morning daylight at your "
             "destination and avoid long naps."),
            ("How much cash should I carry around {city}?",
             "Cards are widely accepted, so a small amount for markets, tips and transit top-ups is "
             "usually enough."),
        ],
    },
    "coding": {
        "slots": {
            "lang": ["Python", "JavaScript", "Go", "Rust", "TypeScript"],
            "thing": ["a list of dictionaries", "a CSV file", "a JSON response", "log files"],
            "error": ["a KeyError", "an off-by-one error", "a null reference", "a timeout"],
        },
        "pairs": [
            ("How do I sort {thing} by one field in {lang}?",
             "Use the built-in sort with a key function that returns that field, and pass the "
             "reverse option if you need descending order."),
            ("I keep hitting {error} in my {lang} script. How should I debug it?",
             "Reproduce it with the smallest input you can, log the values right before the failure "
             "and check your assumptions about the data."),
            ("What's a clean way to read {thing} in {lang}?",
             "Use the standard library parser rather than splitting strings by hand, and stream "
             "the input if it's large."),
            ("Should I write tests before refactoring this {lang} module?",
             "Yes. A few tests that pin down the current behavior make the refactor much safer."),
            ("How do I pick good variable names?",
             "Name things for what they mean, not their type. Short names are fine in small scopes; "
             "use longer, descriptive names for wider ones."),
            ("Can you explain what a race condition is?",
             "It's when the result depends on the timing of concurrent operations, like two threads "
             "updating the same value without a lock."),
        ],
    },
    "fitness": {
        "slots": {
            "muscle": ["shoulders", "hamstrings", "core", "upper back", "glutes"],
            "minutes": ["20", "30", "45"],
            "exercise": ["squats", "push-ups", "lunges", "planks", "rows"],
        },
        "pairs": [
            ("Can you suggest a {minutes}-minute workout for my {muscle}?",
             "Warm up for five minutes, then do three rounds of two or three exercises for your "
             "{muscle}, resting about a minute between rounds."),
            ("How do I improve my form on {exercise}?",
             "Slow the movement down, film yourself from the side and keep a neutral spine."),
            ("How often should I stretch?",
             "A short session most days beats one long session a week. Hold each stretch for about "
             "thirty seconds."),
            ("Is it bad to train when I'm still sore?",
             "Light activity is fine and can help. If the soreness is sharp or lasts more than a few "
             "days, rest that area."),
            ("What should I eat after a workout?",
             "Aim for protein plus carbohydrates within a couple of hours, like yogurt with fruit or "
             "a rice bowl with beans."),
            ("How many rest days do I need each week?",
             "Most people do well with one or two, and rest days can include easy walking."),
        ],
    },
    "books": {
        "slots": {"genre": ["science fiction", "mystery", "memoir", "fantasy", "popular science"]},
        "pairs": [
            ("How can I make time to read more?",
             "Keep a book with you, read for ten minutes before bed and swap some scrolling for a "
             "chapter."),
            ("Do you have tips for getting into {genre}?",
             "Start with one well-loved recent title and one short classic, then follow the authors "
             "you like rather than lists."),
            ("How do I keep track of characters in a long novel?",
             "Jot a one-line note per character when they first appear, or keep a small cast list "
             "on your bookmark."),
            ("Is it okay to stop reading a book I'm not enjoying?",
             "Absolutely. Give it fifty pages, and if it still doesn't click, move on."),
            ("What's a good way to start a book club?",
             "Invite four to eight people, pick shorter books at first and meet once a month "
             "somewhere comfortable."),
            ("Should I read {genre} in print or as e-books?",
             "Whichever you'll actually pick up. E-books are handy for travel; print is easier to "
             "flip back through."),
        ],
    },
    "gardening": {
        "slots": {
            "plant": ["tomatoes", "basil", "lavender", "peppers", "strawberries", "zucchini"],
            "soil": ["clay", "sandy", "rocky"],
        },
        "pairs": [
            ("When should I plant {plant}?",
             "After the last frost, once the soil has warmed. Starting seeds indoors a few weeks "
             "earlier gives you a head start."),
            ("My garden has {soil} soil. How can I improve it?",
             "Work in compost every season; it improves drainage and structure whatever soil you "
             "start with."),
            ("Why are the leaves on my {plant} turning yellow?",
             "Often it's overwatering or a lack of nitrogen. Check that the soil drains well before "
             "adding fertilizer."),
            ("How do I keep slugs away from my {plant}?",
             "Water in the morning, hand-pick them at dusk and try a ring of copper tape around the "
             "plants."),
            ("Can I grow {plant} in containers?",
             "Yes. Pick a pot with drainage holes, use good potting mix and water more often than "
             "you would a bed."),
            ("Is mulching worth the effort?",
             "Yes. A layer of mulch keeps moisture in, suppresses weeds and feeds the soil."),
        ],
    },
    "finance": {
        "slots": {
            "amount": ["$500", "$1,200", "$3,000", "$5,000"],
            "goal": ["an emergency fund", "a new laptop", "a vacation", "a down payment"],
        },
        "pairs": [
            ("How should I start budgeting?",
             "Track a month of spending first, then split income into needs, wants and savings and "
             "adjust from there."),
            ("I have {amount} saved. Should I pay off debt or invest?",
             "Pay off high-interest debt first, keep a small emergency cushion, then invest for "
             "long-term goals."),
            ("What's a good way to save for {goal}?",
             "Set a target and a date, divide to get a monthly amount and automate a transfer "
             "right after payday."),
            ("Are index funds a good idea for beginners?",
             "They're a common choice because they're diversified and low-cost, but consider your "
             "timeline and risk tolerance."),
            ("How can I cut my monthly subscriptions?",
             "List every recurring charge, cancel anything unused for a month and rotate streaming "
             "services instead of keeping them all."),
            ("Where should I keep {goal} savings?",
             "A high-yield savings account keeps it safe and accessible while earning a little "
             "interest."),
        ],
    },
    "home": {
        "slots": {
            "room": ["kitchen", "bathroom", "bedroom", "hallway", "living room"],
            "problem": ["a squeaky door hinge", "a dripping faucet", "a running toilet",
                        "a sticking drawer"],
        },
        "pairs": [
            ("How do I fix {problem}?",
             "Usually one worn or dry part is to blame: take a photo before taking it apart, then "
             "clean, lubricate or replace that piece."),
            ("What color should I paint my {room}?",
             "Test two or three samples on the wall and look at them in morning and evening light."),
            ("How can I make my {room} feel bigger?",
             "Use lighter colors, hang a mirror opposite a window and clear the floor as much as "
             "possible."),
            ("What's the best way to clean grout?",
             "A paste of baking soda and water with a stiff brush handles most stains; seal the "
             "grout afterwards."),
            ("Any tips for decluttering the {room}?",
             "Go one category at a time, keep only what you use or love and donate the rest the "
             "same week."),
            ("How do I hang a heavy shelf safely?",
             "Find the studs, use screws rated for the load and check it with a level before "
             "tightening."),
        ],
    },
    "language": {
        "slots": {
            "lang": ["Spanish", "Japanese", "French", "Italian", "German", "Korean"],
            "minutes": ["15", "20", "30"],
        },
        "pairs": [
            ("What's the fastest way to build vocabulary in {lang}?",
             "Use spaced-repetition flashcards daily and learn words inside short phrases."),
            ("How can I practice speaking {lang} without a partner?",
             "Shadow audio clips, narrate your day out loud and record yourself to compare with "
             "native speakers."),
            ("Is {minutes} minutes a day enough to learn {lang}?",
             "Consistency matters more than length. {minutes} focused minutes every day add up over "
             "a few months."),
            ("Should I study grammar or just immerse myself?",
             "A mix works best: a little grammar gives structure, and lots of listening fills it in."),
            ("What kind of {lang} shows should I watch?",
             "Start with slice-of-life shows with subtitles in {lang}, then drop the subtitles as "
             "you improve."),
            ("How do I stay motivated learning {lang}?",
             "Set small weekly goals, track your streak and celebrate the milestones."),
        ],
    },
    "movies": {
        "slots": {"genre": ["thriller", "comedy", "documentary", "animated film", "western"]},
        "pairs": [
            ("How should I plan a movie night with friends?",
             "Pick a theme, keep snacks simple and have two backup options in case people have "
             "seen the first."),
            ("What makes a good {genre}?",
             "A clear premise, characters you care about and pacing that never lets the middle sag."),
            ("How do I get better at noticing cinematography?",
             "Watch a scene twice with the sound off and pay attention to framing, color and camera "
             "movement."),
            ("Why do sequels so often disappoint?",
             "They repeat what worked without the surprise, and expectations are much higher."),
            ("Is it worth watching older black-and-white films?",
             "Yes, many hold up beautifully and show where modern techniques came from."),
            ("How can I keep track of films I want to see?",
             "Keep a simple list and add a one-line reason for each title so you remember why."),
        ],
    },
    "tech": {
        "slots": {"device": ["laptop", "phone", "tablet", "router"]},
        "pairs": [
            ("My {device} feels slow. What can I do?",
             "Restart it, free up storage, remove apps you don't use and check for updates."),
            ("How often should I back up my files?",
             "Automate a daily backup and keep one copy off-site or in the cloud."),
            ("How do I make a strong password?",
             "Use a long passphrase of several random words and a password manager so each site "
             "gets a unique one."),
            ("Should I install updates on my {device} right away?",
             "Security updates are worth installing promptly; for major versions, waiting a week to "
             "read about issues is reasonable."),
            ("How do I make my {device} battery last longer?",
             "Lower the brightness, turn off background refresh for rarely used apps and avoid "
             "extreme heat."),
            ("What's the difference between RAM and storage?",
             "RAM is short-term working memory for running programs; storage keeps your files when "
             "the power is off."),
        ],
    },
    "pets": {
        "slots": {"pet": ["cat", "dog", "rabbit"], "food": ["dry food", "fresh food", "a mixed diet"]},
        "pairs": [
            ("How often should I take my {pet} to the vet?",
             "A yearly checkup is typical for a healthy adult, and more often for very young or "
             "older animals."),
            ("Is {food} better for my {pet}?",
             "Either can work. What matters most is a complete, balanced diet in the right portion."),
            ("How do I stop my {pet} from chewing on cables?",
             "Cover or hide the cables, offer safe things to chew nearby and reward using them."),
            ("What toys keep a {pet} busy while I'm at work?",
             "Puzzle feeders and rotating a few toys each week keep things interesting."),
            ("How do I trim my {pet}'s nails without stress?",
             "Go slowly, do one or two nails at a time and pair it with treats until it's routine."),
            ("Is pet insurance worth it for a {pet}?",
             "It can be if a large surprise vet bill would strain your budget; compare deductibles "
             "and exclusions."),
        ],
    },
    "music": {
        "slots": {"instrument": ["guitar", "piano", "violin", "ukulele", "drums"],
                  "minutes": ["20", "30", "45"]},
        "pairs": [
            ("How long should I practice {instrument} each day?",
             "{minutes} focused minutes a day beats one long session a week. Split it between "
             "technique and songs you enjoy."),
            ("How do I stop rushing the tempo on {instrument}?",
             "Practice with a metronome at a slower speed and only raise it after three clean runs."),
            ("What's a good way to learn music theory?",
             "Learn it alongside the pieces you play: name the chords and scales you actually use."),
            ("My fingers hurt after practicing. Is that normal?",
             "Some soreness is normal at first, but take breaks and stop if the pain is sharp."),
            ("How do I get over stage fright before a recital?",
             "Play for friends first, rehearse the opening until it's automatic and slow your "
             "breathing before you start."),
            ("Should I learn to read sheet music?",
             "It's worth it if you want to play with others; learning by ear is fine for casual "
             "playing."),
        ],
    },
    "career": {
        "slots": {"role": ["project manager", "data analyst", "UX designer", "software engineer",
                           "marketing lead"]},
        "pairs": [
            ("How do I prepare for an interview as a {role}?",
             "Research the company, prepare three stories that show your impact and practice "
             "explaining your decisions out loud."),
            ("How can I ask my manager for useful feedback?",
             "Ask specific questions, like what one thing you could do differently on your last "
             "project."),
            ("How do I stay productive working from home?",
             "Keep a fixed start time, a separate workspace and a short list of the three things "
             "that matter most each day."),
            ("What should go in a {role} portfolio?",
             "Two or three strong case studies showing the problem, your process and the result."),
            ("How do I negotiate a raise?",
             "Gather evidence of your impact, research market rates and ask for a specific number "
             "in a scheduled conversation."),
            ("How do I handle too many meetings?",
             "Decline meetings without an agenda, ask for notes instead and block focus time."),
        ],
    },
    "photography": {
        "slots": {"subject": ["portraits", "landscapes", "street scenes", "birds", "night skies"]},
        "pairs": [
            ("How do I take sharper photos of {subject}?",
             "Use a faster shutter speed, focus carefully on the key point and brace yourself or "
             "use a tripod."),
            ("What is the rule of thirds?",
             "Split the frame into a three-by-three grid and place important elements along those "
             "lines or where they cross."),
            ("What's the best time of day to shoot {subject}?",
             "The hour after sunrise and before sunset gives soft, warm light that suits most "
             "subjects."),
            ("How should I organize thousands of photos?",
             "Import into folders by date, tag favorites right away and delete obvious misses in "
             "the first pass."),
            ("Should I shoot in RAW?",
             "If you like editing, yes: RAW keeps more detail in highlights and shadows, at the "
             "cost of larger files."),
            ("How do I edit photos without overdoing it?",
             "Make small adjustments, take breaks and compare with the original before exporting."),
        ],
    },
}

GREETINGS = [
    "Hi there! What can I help you with today?",
    "Hello! What would you like to talk about?",
    "Welcome back. How can I help you today?",
    "Hi! Ask me anything, I'm happy to help.",
]

# ---------------------------------------------------------------------------------------------
# Single-session banks (single-session-user, single-session-assistant, single-session-preference).
# Slot values may be tuples (use {slot[0]}) or callables of the rng. "fixed" pins topic slots.

INVENTED_BOOKS = [
    ("The Glass Orchard", "Mara Quill"), ("Salt and Starlight", "Devin Oyelaran"),
    ("The Cartographer's Daughter", "Ines Valdez"), ("A Map of Quiet Rooms", "Tomasz Brenn"),
    ("The Lantern Protocol", "Hana Whitlock"), ("Nine Bridges Down", "Rafael Moreau"),
    ("The Winter Archivist", "Priya Sandoval"), ("Echoes Under Ice", "Callum Ferris"),
]
BOARD_GAMES = ["Azul", "Wingspan", "Carcassonne", "Ticket to Ride", "Codenames", "Pandemic",
               "Splendor", "Catan"]
BANDS = ["the Velvet Tides", "Northern Static", "Paper Comets", "the Lowland Choir",
         "Juniper Skyline", "Brass Lantern"]

SSU_BANK: list[dict[str, Any]] = [
    {"topic": "pets", "fixed": {"pet": "{pet[0]}"},
     "slots": {"pet": [("cat", "dog"), ("dog", "cat"), ("rabbit", "cat"), ("parrot", "dog"),
                       ("guinea pig", "rabbit")],
               "name": ["Biscuit", "Pepper", "Juniper", "Mochi", "Waffles", "Clementine", "Ziggy"]},
     "user": "I adopted a {pet[0]} from the local shelter last month and named it {name}. What "
             "supplies should I have ready for the first few weeks?",
     "assistant": "Congratulations on adopting {name}! Have food suited to a young {pet[0]}, a quiet "
                  "resting spot and a few toys, and book a first vet visit.",
     "question": "What did I name the {pet[0]} I adopted from the shelter?",
     "answer": "{name}",
     "abs_question": "What did I name the {pet[1]} I adopted from the shelter?",
     "abs_answer": "You mentioned adopting a {pet[0]} named {name} but not a {pet[1]}."},
    {"topic": "career",
     "slots": {"minutes": ["25", "35", "40", "50", "55"], "mode": ["by train", "by bus", "by bike"]},
     "user": "My commute to the office takes about {minutes} minutes each way {mode}, so I want "
             "podcasts that fit that window. Any ideas?",
     "assistant": "A {minutes}-minute ride fits one episode a day nicely. Look for interview shows or "
                  "short history series that run about that long.",
     "question": "How long is my commute to the office each way?",
     "answer": "{minutes} minutes",
     "abs_question": "How long is my partner's commute to work?",
     "abs_answer": "You mentioned your own commute of {minutes} minutes but not your partner's."},
    {"topic": "career",
     "slots": {"field": ["marine biology", "economics", "civil engineering", "art history",
                         "statistics", "linguistics"],
               "uni": ["the University of Leeds", "Ohio State", "McGill", "UC Davis",
                       "the University of Auckland"]},
     "user": "I graduated with a degree in {field} from {uni}, and now I'm thinking about switching "
             "careers. Where should I start?",
     "assistant": "A {field} background gives you strong research skills. List roles that use them "
                  "and talk to two or three people already doing that work.",
     "question": "What did I get my degree in?",
     "answer": "{field}",
     "abs_question": "Where did I do my master's degree?",
     "abs_answer": "You mentioned your degree in {field} from {uni} but not a master's degree."},
    {"topic": "home",
     "slots": {"item": ["standing desk", "espresso machine", "air purifier", "rice cooker",
                        "robot vacuum"],
               "store": ["Costco", "IKEA", "Best Buy", "a neighborhood garage sale",
                         "a local hardware store"]},
     "user": "I bought a {item} at {store} last weekend and I'm still figuring it out. How do I "
             "keep it in good shape?",
     "assistant": "Read the quick-start guide once, clean it on the schedule in the manual and "
                  "register the warranty while the receipt is handy.",
     "question": "Where did I buy my {item}?",
     "answer": "{store}"},
    {"topic": "finance",
     "slots": {"rel": [("sister", "brother"), ("dad", "mom"), ("grandmother", "grandfather"),
                       ("best friend", "cousin")],
               "gift": ["a pottery class voucher", "a cast-iron skillet", "noise-cancelling "
                        "headphones", "a hammock", "a framed star map"]},
     "user": "For my {rel[0]}'s birthday I ended up getting {gift}, and now I need to write a card "
             "to go with it. Can you help?",
     "assistant": "Of course! Say why you picked {gift}, share a favorite memory with your "
                  "{rel[0]} and end with a warm wish for the year ahead.",
     "question": "What did I get my {rel[0]} for their birthday?",
     "answer": "{gift}",
     "abs_question": "What did I get my {rel[1]} for their birthday?",
     "abs_answer": "You mentioned the birthday gift for your {rel[0]} but not one for your {rel[1]}."},
    {"topic": "music", "fixed": {"instrument": "{instrument}"},
     "slots": {"instrument": ["piano", "violin", "guitar", "cello"],
               "teacher": ["Mrs. Alvarez", "Mr. Okafor", "Ms. Lindqvist", "Mr. Tanaka", "Ms. Dubois"],
               "day": ["Tuesday", "Thursday", "Saturday"]},
     "user": "I've been taking {instrument} lessons every {day} with my teacher, {teacher}, and I want "
             "to practice better between lessons. Any advice?",
     "assistant": "Ask {teacher} for one clear goal each week, practice it in short daily sessions "
                  "and record yourself so you can hear progress.",
     "question": "What is the name of my {instrument} teacher?",
     "answer": "{teacher}",
     "abs_question": "What is the name of my singing teacher?",
     "abs_answer": "You mentioned your {instrument} teacher, {teacher}, but not a singing teacher."},
    {"topic": "home",
     "slots": {"color": ["dark green", "silver", "bright red", "navy blue", "pearl white"],
               "car": ["Subaru Outback", "Honda Civic", "Toyota Corolla", "Mazda 3"]},
     "user": "I drive a {color} {car} and the paint is starting to look dull. How do I make my car "
             "shine again?",
     "assistant": "Wash it, use a clay bar to lift grime, then polish and add a coat of wax. Doing "
                  "that twice a year keeps the finish fresh.",
     "question": "What color is my car?",
     "answer": "{color}",
     "abs_question": "What color is my motorcycle?",
     "abs_answer": "You mentioned your {color} {car} but not a motorcycle."},
]

SSA_BANK: list[dict[str, Any]] = [
    {"topic": "books",
     "slots": {"genre": ["science fiction", "mystery", "historical fiction", "fantasy"],
               "b": lambda rng: rng.sample(INVENTED_BOOKS, 3)},
     "user": "Can you recommend three {genre} novels for a long flight?",
     "assistant": "Here are three you might enjoy: 1) {b[0][0]} by {b[0][1]}, 2) {b[1][0]} by "
                  "{b[1][1]}, and 3) {b[2][0]} by {b[2][1]}. The second is the lightest read.",
     "question": "In our chat about {genre} novels for my flight, what was the second book you "
                 "recommended?",
     "answer": "{b[1][0]} by {b[1][1]}"},
    {"topic": "recipes",
     "slots": {"dish": ["focaccia", "roast chicken thighs", "granola", "stuffed peppers"],
               "temp": ["375°F (190°C)", "400°F (200°C)", "425°F (220°C)", "350°F (175°C)"],
               "minutes": ["25", "35", "45"]},
     "user": "What temperature and how long should I bake {dish}?",
     "assistant": "Bake the {dish} at {temp} for about {minutes} minutes, until golden on top, and "
                  "let it rest for ten minutes before serving.",
     "question": "What oven temperature did you suggest for baking the {dish}?",
     "answer": "{temp}"},
    {"topic": "travel",
     "slots": {"city": ["Porto", "Ljubljana", "Oaxaca", "Tallinn", "Bologna"],
               "morning": ["the old town walls", "the botanical garden", "the central market"],
               "lunch": ["a family-run place called Casa Lumo", "the food hall by the station",
                         "a noodle bar named Hoshi", "the rooftop cafe Verdant"],
               "evening": ["the hilltop viewpoint", "the riverside promenade", "the harbor steps"]},
     "user": "I have one free day in {city}. Could you sketch an itinerary?",
     "assistant": "Start the morning at {morning}, have lunch at {lunch}, spend the afternoon in a "
                  "museum and finish with sunset at {evening}.",
     "question": "Where did you suggest I have lunch during my free day in {city}?",
     "answer": "{lunch}"},
    {"topic": "fitness",
     "slots": {"move": ["goblet squats", "Romanian deadlifts", "walking lunges", "dumbbell rows"],
               "sets": ["3", "4", "5"], "reps": ["8", "10", "12"]},
     "user": "I want a simple strength routine twice a week. How should I program {move}?",
     "assistant": "For {move}, do {sets} sets of {reps} reps with about ninety seconds of rest, and "
                  "add weight only when the last set feels easy.",
     "question": "How many sets and reps of {move} did you recommend?",
     "answer": "{sets} sets of {reps} reps"},
    {"topic": "finance",
     "slots": {"g": [("$6,000", "12", "$500"), ("$9,000", "18", "$500"), ("$4,800", "8", "$600"),
                     ("$10,800", "24", "$450")]},
     "user": "I want to save {g[0]} for a big trip in {g[1]} months. How much should I put aside "
             "each month?",
     "assistant": "To reach {g[0]} in {g[1]} months you'd need to save about {g[2]} per month. An "
                  "automatic transfer on payday makes it much easier.",
     "question": "How much did you say I should save each month for my trip?",
     "answer": "{g[2]}"},
    {"topic": "gardening",
     "slots": {"plant": ["snake plant", "fiddle-leaf fig", "pothos", "ZZ plant", "peace lily"],
               "days": ["7", "10", "14"]},
     "user": "I just got a {plant} for my living room. How often should I water it?",
     "assistant": "Water your {plant} about every {days} days, letting the top few centimeters of "
                  "soil dry out first, and water a little less in winter.",
     "question": "How often did you tell me to water my {plant}?",
     "answer": "About every {days} days"},
]

SSP_BANK: list[dict[str, Any]] = [
    {"topic": "photography",
     "slots": {"camera": ["Canon AE-1", "Nikon FM2", "Pentax K1000"],
               "film": ["black-and-white", "color slide"]},
     "user": "I've been shooting mostly {film} film on my {camera} and I love the look. How should I "
             "store my rolls?",
     "assistant": "Keep unexposed film in the fridge in a sealed bag, let it warm up before loading "
                  "and develop exposed rolls reasonably soon.",
     "question": "Can you suggest some accessories that would complement my photography setup?",
     "answer": "The user would prefer suggestions of accessories compatible with a {camera} film "
               "camera, such as lenses, light meters or filters suited to {film} film. They might "
               "not prefer suggestions for digital cameras or gear that doesn't fit a manual film "
               "body."},
    {"topic": "recipes",
     "slots": {"diet": ["vegetarian", "vegan"], "cuisine": ["Thai", "Mexican", "Indian", "Sichuan"]},
     "user": "I've been {diet} for two years and I'm obsessed with spicy {cuisine} food. Which pantry "
             "staples should I always keep?",
     "assistant": "Stock rice, dried beans or lentils, good chili pastes, aromatics like garlic and "
                  "ginger, and a few fresh herbs each week.",
     "question": "Can you suggest a dinner I could cook this weekend?",
     "answer": "The user would prefer {diet} dinner ideas inspired by spicy {cuisine} cooking. They "
               "might not prefer recipes with meat or mild dishes unrelated to {cuisine} flavors."},
    {"topic": "travel",
     "slots": {"land": ["mountain lakes", "coastal hiking trails", "quiet forests"],
               "dislike": ["crowded city centers", "big all-inclusive resorts"]},
     "user": "When I travel I much prefer {land} over {dislike}; my last trip was far too busy. How "
             "do I research destinations better?",
     "assistant": "Look at regional tourism sites and hiking forums, check visitor numbers by "
                  "season and read recent trip reports.",
     "question": "Where should I go for a long weekend getaway this fall?",
     "answer": "The user would prefer destinations with {land} and a calm atmosphere. They might not "
               "prefer {dislike} or busy tourist hotspots."},
    {"topic": "fitness",
     "slots": {"cond": ["a knee injury", "sore knees", "an old ankle sprain"],
               "sport": ["swimming", "cycling", "rowing"]},
     "user": "Because of {cond} I stick to low-impact workouts, and {sport} has become my favorite. "
             "How should I warm up?",
     "assistant": "Start with five minutes of easy movement, add gentle mobility drills for hips and "
                  "ankles, then build up to your working pace.",
     "question": "Can you recommend a new workout routine for me?",
     "answer": "The user would prefer low-impact routines that are gentle on the joints, possibly "
               "building on {sport}. They might not prefer high-impact exercises like running or "
               "jumping drills that could aggravate {cond}."},
    {"topic": "recipes",
     "slots": {"brewer": ["AeroPress", "V60 pour-over", "French press"], "roast": ["light", "medium"]},
     "user": "I brew with a {brewer} every morning and I've come to love {roast} roasts with fruity "
             "notes. Why does my coffee sometimes taste sour?",
     "assistant": "Sourness usually means under-extraction: grind a little finer, use hotter water "
                  "or extend the brew time slightly.",
     "question": "Any suggestions for coffee beans I should try next?",
     "answer": "The user would prefer {roast} roast beans with fruity, bright notes that suit a "
               "{brewer}. They might not prefer dark, smoky roasts or pre-ground coffee made for "
               "other brewers."},
    {"topic": "music", "fixed": {"instrument": "{style[1]}"},
     "slots": {"style": [("jazz piano", "piano"), ("fingerstyle guitar", "guitar")]},
     "user": "I've been learning {style[0]} and I mostly practice standards by ear. How can I get "
             "better at improvising?",
     "assistant": "Transcribe short phrases you like, practice them in several keys and improvise "
                  "over slow backing tracks.",
     "question": "Can you recommend some learning resources for my music practice?",
     "answer": "The user would prefer resources focused on {style[0]}, especially ear training and "
               "improvisation. They might not prefer generic beginner method books or material for "
               "other instruments."},
    {"topic": "books",
     "slots": {"genre": ["cozy mysteries", "hard science fiction", "narrative history"],
               "fmt": ["audiobooks", "e-books"]},
     "user": "These days I only get through {fmt}, and {genre} are what I reach for every time. How "
             "can I keep track of what I've finished?",
     "assistant": "A simple reading log works: title, date finished and a one-line note. Many apps "
                  "can sync it with your library.",
     "question": "What should I read next?",
     "answer": "The user would prefer {genre}, ideally available as {fmt}. They might not prefer "
               "genres they haven't shown interest in or titles only available in print."},
]

KU_BANK: list[dict[str, Any]] = [
    {"topic": "fitness",
     "slots": {"pb": [("27:40", "26:15"), ("31:05", "29:48"), ("24:30", "23:52")]},
     "old_user": "My personal best in the 5K is {pb[0]} and I'd love to get faster. What kind of "
                 "interval training would help?",
     "old_assistant": "Try one interval session a week, like six 400-meter repeats at goal pace, "
                      "plus one longer easy run.",
     "new_user": "Great news: I ran a 5K on Saturday and set a new personal best of {pb[1]}! How "
                 "should I adjust my training now?",
     "new_assistant": "Congratulations! Take an easy week, then set your new goal pace from {pb[1]} "
                      "and keep the same structure.",
     "question": "What is my current personal best time in the 5K?",
     "answer": "{pb[1]}",
     "abs_question": "What is my current personal best time in the half marathon?",
     "abs_answer": "You mentioned your 5K personal best but not a half marathon time."},
    {"topic": "gardening",
     "slots": {"n": [("12", "15"), ("8", "11"), ("20", "23")]},
     "old_user": "I have {n[0]} houseplants in my apartment now, and keeping track of watering is "
                 "getting hard. Any system you'd suggest?",
     "old_assistant": "Group plants with similar needs and keep a simple watering log or app "
                      "reminder for each group.",
     "new_user": "I just brought home three more, so I'm up to {n[1]} houseplants. Will my watering "
                 "system still work?",
     "new_assistant": "It should; just add the new plants to the group that matches their light and "
                      "water needs.",
     "question": "How many houseplants do I have now?",
     "answer": "{n[1]}"},
    {"topic": "career",
     "slots": {"co": [("Brightline Analytics", "Harbor Health"), ("Northwind Logistics",
                      "Kestrel Games"), ("Maple & Finch", "Quanta Labs")]},
     "old_user": "I work as an analyst at {co[0]} and want to get better at presenting results. "
                 "Any tips?",
     "old_assistant": "Lead with the conclusion, show one chart per point and end with a clear "
                      "recommendation.",
     "new_user": "Quick update: I've just started a new job at {co[1]}! How do I make a good "
                 "impression in my first month?",
     "new_assistant": "Congratulations! Listen a lot, learn how decisions get made and deliver one "
                      "small, visible win early.",
     "question": "Which company do I work for now?",
     "answer": "{co[1]}",
     "abs_question": "Which company does my partner work for now?",
     "abs_answer": "You mentioned your own jobs at {co[0]} and {co[1]} but not where your partner "
                   "works."},
    {"topic": "finance",
     "slots": {"rent": [("$1,450", "$1,575"), ("$980", "$1,060"), ("$2,100", "$2,240")]},
     "old_user": "My rent is {rent[0]} a month, and I'm trying to figure out a realistic grocery "
                 "budget. Can you help?",
     "old_assistant": "Start from your take-home pay, subtract fixed costs like rent, and aim for "
                      "groceries at around ten to fifteen percent of what's left.",
     "new_user": "My landlord just raised my rent to {rent[1]} a month, so I need to rework my "
                 "budget. Where can I cut back?",
     "new_assistant": "Look at subscriptions, eating out and impulse purchases first; small cuts "
                      "there usually cover a rent increase.",
     "question": "How much is my monthly rent now?",
     "answer": "{rent[1]}",
     "abs_question": "How much is my monthly car payment now?",
     "abs_answer": "You mentioned your rent but not a car payment."},
    {"topic": "books",
     "slots": {"goal": [("20", "30"), ("12", "18"), ("25", "40")]},
     "old_user": "My reading goal for this year is {goal[0]} books. How can I fit more reading "
                 "into my week?",
     "old_assistant": "Read in small pockets of time, keep a book or e-reader with you and try "
                      "audiobooks on walks.",
     "new_user": "I'm ahead of schedule, so I've raised my reading goal for the year to {goal[1]} "
                 "books. How do I pick books that keep me motivated?",
     "new_assistant": "Alternate long and short books, mix genres and keep a list of titles you're "
                      "excited about.",
     "question": "What is my reading goal for this year?",
     "answer": "{goal[1]} books"},
    {"topic": "fitness",
     "slots": {"f": [("three", "five"), ("two", "four")]},
     "old_user": "I currently go to the gym {f[0]} times a week. Is that enough to build strength?",
     "old_assistant": "Yes, if you train the main movement patterns and add weight gradually.",
     "new_user": "I've started going to the gym {f[1]} times a week now. Should I split my routine "
                 "differently?",
     "new_assistant": "With that many days, an upper and lower body split lets each area recover "
                      "between sessions.",
     "question": "How many times a week do I go to the gym now?",
     "answer": "{f[1]} times a week"},
]

# ---------------------------------------------------------------------------------------------
# Temporal and multi-session banks.

# (past tense, gerund, user turn mentioning "today", assistant reply, context topic)
EVENTS: list[tuple[str, str, str, str, str]] = [
    ("started a sourdough starter", "starting a sourdough starter",
     "I started my very first sourdough starter today! How often do I need to feed it?",
     "Feed it once or twice a day at room temperature, discarding about half first. It should be "
     "ready to bake with in about a week.", "recipes"),
    ("ran my first 10K race", "running my first 10K race",
     "I ran my first 10K race today and my legs feel like jelly. What's the best way to recover?",
     "Well done! Drink plenty of water, eat a meal with protein and carbs and keep tomorrow to an "
     "easy walk.", "fitness"),
    ("repainted the guest bedroom", "repainting the guest bedroom",
     "I repainted the guest bedroom today in a soft sage green. When can I move the furniture back?",
     "Most latex paint is dry to the touch in an hour, but wait about a day before pushing furniture "
     "against the walls.", "home"),
    ("booked flights for my trip to Lisbon", "booking flights for my trip to Lisbon",
     "I booked flights for my trip to Lisbon today! Which neighborhoods should I consider?",
     "Alfama is historic and charming, Baixa is central and flat, and Principe Real is quieter with "
     "great cafes.", "travel"),
    ("had my first Spanish conversation class", "having my first Spanish conversation class",
     "I had my first Spanish conversation class today and I was so nervous. How do I get more "
     "comfortable speaking?", "Nerves are normal. Prepare a few phrases about yourself, speak slowly "
     "and treat mistakes as part of the practice.", "language"),
    ("bought a new road bike", "buying a new road bike",
     "I bought a new road bike today! What basic maintenance should I learn first?",
     "Learn to fix a flat, keep the chain clean and lubricated and check tire pressure before every "
     "ride.", "fitness"),
    ("attended a night photography workshop", "attending a night photography workshop",
     "I attended a night photography workshop today. What settings should I start with for stars?",
     "Try a wide aperture, ISO around 1600 to 3200 and a 15 to 20 second exposure on a sturdy "
     "tripod.", "photography"),
    ("planted a raised vegetable bed", "planting a raised vegetable bed",
     "I planted a raised vegetable bed today with lettuce and carrots. How often should I water it?",
     "Keep the soil evenly moist: a deep watering every two or three days, more in hot weather.",
     "gardening"),
    ("finished my online data visualization course", "finishing my online data visualization course",
     "I finished my online data visualization course today! How can I keep practicing?",
     "Pick a public dataset you care about and publish one small chart a week.", "coding"),
    ("adopted a senior dog named Rufus", "adopting a senior dog named Rufus",
     "I adopted a senior dog named Rufus today. How do I help an older dog settle in?",
     "Keep things calm, set a steady routine for meals and walks and give him a soft bed in a quiet "
     "corner.", "pets"),
]

# (category, item, user turn with "today", assistant reply, context topic)
PURCHASES: list[tuple[str, str, str, str, str]] = [
    ("kitchen gadget", "an immersion blender",
     "I bought an immersion blender today. What can I make with it besides soup?",
     "Smoothies, sauces, whipped cream and quick mayonnaise all work well with one.", "recipes"),
    ("piece of camping gear", "a two-person tent",
     "I bought a two-person tent today for summer trips. Should I pitch it at home first?",
     "Yes, a practice pitch in the yard means no surprises at a windy campsite.", "travel"),
    ("piece of workout equipment", "a set of adjustable dumbbells",
     "I bought a set of adjustable dumbbells today. What's a good first routine?",
     "Start with goblet squats, rows, presses and lunges, two or three times a week.", "fitness"),
    ("houseplant", "a monstera",
     "I bought a monstera today for my living room. Where should I put it?",
     "Bright, indirect light is ideal; keep it out of harsh afternoon sun.", "gardening"),
    ("camera accessory", "a carbon-fiber tripod",
     "I bought a carbon-fiber tripod today. How do I keep it steady in the wind?",
     "Spread the legs wide, keep the center column down and hang your bag from the hook.",
     "photography"),
    ("piece of furniture", "a reading armchair",
     "I bought a reading armchair today for the corner of my bedroom. What lamp should go with it?",
     "A floor lamp with a warm bulb placed slightly behind your shoulder works best.", "home"),
]

TIME_AGO = {7: "a week ago", 10: "ten days ago", 14: "two weeks ago", 21: "three weeks ago"}

# Multi-session exchange templates; {x} is the per-session value.
MS_GAMES = [
    ("I picked up {x} at the game store today. What's a good strategy for first-time players?",
     "Focus on learning the flow of a turn first, and don't worry about optimal moves in game one."),
    ("We opened {x} at game night, which I just bought this week. How do I teach the rules fast?",
     "Explain the goal first, then play an open-handed practice round and answer questions as "
     "they come up."),
    ("I ordered {x} online and it arrived today. How should I organize all the pieces?",
     "Small zip bags or a tackle box with a compartment per component type make setup much faster."),
]
MS_CONCERTS = [
    ("I spent ${x} on tickets to see {band} live next month. How early should I get to the venue?",
     "For general admission, arriving an hour before doors opens gives you a good spot."),
    ("I just paid ${x} for tickets to the {band} concert. Is it worth buying earplugs?",
     "Yes, musician earplugs lower the volume evenly so the music still sounds clear."),
    ("Bought tickets for {band} today, ${x} in total. What should I bring to an outdoor show?",
     "A light jacket, a refillable water bottle, a small power bank and comfortable shoes."),
]
MS_VOLUNTEER = [
    ("I volunteered for {x} hours at the food bank today, sorting donations. How can I help more?",
     "Ask the coordinator which shifts are hardest to fill; regular volunteers are the most "
     "useful."),
    ("Spent {x} hours volunteering at the animal shelter today walking dogs. Any tips for shy dogs?",
     "Let them approach you, avoid direct eye contact and keep walks short and quiet at first."),
    ("I put in {x} hours volunteering at the community garden today. What should we plant next?",
     "Fast crops like radishes and salad greens keep volunteers motivated with quick results."),
]
MS_CYCLING = [
    ("I rode {x} km on my bike this weekend along the river path. How do I avoid a sore back?",
     "Check your saddle height and reach, and work on core strength off the bike."),
    ("Did a {x} km ride today with a friend. What should I eat before longer rides?",
     "A carbohydrate-rich meal two to three hours before, plus a small snack for every hour out."),
    ("I cycled {x} km to the coast and back today. How do I pace myself on hills?",
     "Shift early, keep your cadence steady and save effort for the top."),
]
MS_TRIPS = [
    ("I just got back from a work trip to {x}. How do I recover after a week of meetings?",
     "Block a quiet morning, sort your notes while they're fresh and get outside in daylight."),
    ("Flying home from a conference in {x} today. Any tips for writing up what I learned?",
     "Write three takeaways and one action for each talk before you land, while it's fresh."),
    ("My company sent me to {x} this week for a client workshop. How do I expense meals properly?",
     "Keep itemized receipts, note who attended each meal and submit within your company's "
     "deadline."),
]
WORK_CITIES = ["Denver", "Rotterdam", "Singapore", "Austin", "Hamburg", "Osaka", "Toronto"]

# ---------------------------------------------------------------------------------------------
# Generator machinery.


class Evidence(NamedTuple):
    """One answer session's key exchange; ``mark`` names the role whose turn has_answer=true."""

    topic: str
    user: str
    assistant: str
    mark: str  # "user", "assistant" or "" (related session with no evidence turn)
    fixed: dict[str, str] | None = None


@dataclass(frozen=True)
class Ctx:
    rng: random.Random
    abstain: bool
    span: int
    """Sessions fall on day offsets 0..span from ``start``."""
    qday: int
    """Day offset of the question (always after ``span``)."""
    start: date

    def date(self, day: int) -> date:
        return self.start + timedelta(days=day)


@dataclass(frozen=True)
class Plan:
    question: str
    answer: str | int
    evidence: list[Evidence]
    days: list[int]
    """Day offset of each evidence session, chronological."""


class Scenario(NamedTuple):
    build: Callable[[Ctx], Plan]
    abstains: bool


class Spec(NamedTuple):
    qtype: str
    scenario: Scenario
    abstain: bool
    gpt4: bool
    quirk: bool


@dataclass(frozen=True)
class Profile:
    sessions: tuple[int, int]
    exchanges: tuple[int, ...]
    """Exchanges (user+assistant pairs) per session, drawn uniformly from this tuple."""
    span_days: tuple[int, int]
    max_turns: int


SAMPLE_PROFILE = Profile((12, 16), (2, 2, 2, 2, 2, 3, 3, 3, 4, 5, 6), (24, 60), 12)


def _draw(rng: random.Random, slots: dict[str, Any]) -> dict[str, Any]:
    return {k: v(rng) if callable(v) else rng.choice(v) for k, v in slots.items()}


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _turn(role: str, content: str, has_answer: bool | None = None) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": role, "content": content}
    if has_answer is not None:
        turn["has_answer"] = has_answer
    return turn


def _topic_exchanges(rng: random.Random, topic: str, n: int,
                     fixed: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """``n`` distinct exchanges of ``topic`` (cycling with fresh slot values when n is large)."""
    bank = TOPICS[topic]
    out: list[tuple[str, str]] = []
    while len(out) < n:
        values = {**_draw(rng, bank["slots"]), **(fixed or {})}
        order = list(range(len(bank["pairs"])))
        rng.shuffle(order)
        out += [(bank["pairs"][i][0].format(**values), bank["pairs"][i][1].format(**values))
                for i in order[: n - len(out)]]
    return out


def _filler_session(rng: random.Random, topic: str, profile: Profile) -> list[dict[str, Any]]:
    n = rng.choice(profile.exchanges)
    turns = []
    if 2 * n + 1 <= profile.max_turns and rng.random() < 0.15:
        turns.append(_turn("assistant", rng.choice(GREETINGS)))
    for user, assistant in _topic_exchanges(rng, topic, n):
        turns += [_turn("user", user), _turn("assistant", assistant)]
    return turns


def _answer_session(rng: random.Random, ev: Evidence, profile: Profile) -> list[dict[str, Any]]:
    """Context exchanges of the evidence topic with the evidence exchange at a random position."""
    n = max(3, rng.choice(profile.exchanges))
    pairs = _topic_exchanges(rng, ev.topic, n - 1, ev.fixed)
    pos = rng.randint(0, len(pairs))
    pairs.insert(pos, (ev.user, ev.assistant))
    turns = []
    for i, (user, assistant) in enumerate(pairs):
        turns.append(_turn("user", user, i == pos and ev.mark == "user"))
        turns.append(_turn("assistant", assistant, i == pos and ev.mark == "assistant"))
    return turns


def _days(ctx: Ctx, n: int) -> list[int]:
    return sorted(ctx.rng.sample(range(ctx.span + 1), n))


# ---- scenario builders -----------------------------------------------------------------------


def _filled(entry: dict[str, Any], values: dict[str, Any]) -> Callable[[str], str]:
    return lambda key: entry[key].format(**values)


def _ask(ctx: Ctx, f: Callable[[str], str]) -> tuple[str, str]:
    if ctx.abstain:
        return f("abs_question"), NOT_ENOUGH + f("abs_answer")
    return f("question"), f("answer")


def _single_session(ctx: Ctx, entry: dict[str, Any], mark: str) -> Plan:
    values = _draw(ctx.rng, entry["slots"])
    f = _filled(entry, values)
    fixed = {k: t.format(**values) for k, t in entry.get("fixed", {}).items()}
    ev = Evidence(entry["topic"], f("user"), f("assistant"), mark, fixed)
    question, answer = _ask(ctx, f)
    return Plan(question, answer, [ev], _days(ctx, 1))


def _knowledge_update(ctx: Ctx, entry: dict[str, Any]) -> Plan:
    values = _draw(ctx.rng, entry["slots"])
    f = _filled(entry, values)
    old = Evidence(entry["topic"], f("old_user"), f("old_assistant"), "user")
    new = Evidence(entry["topic"], f("new_user"), f("new_assistant"), "user")
    question, answer = _ask(ctx, f)
    return Plan(question, answer, [old, new], _days(ctx, 2))


def _yours(text: str) -> str:
    """Speaker's phrase as addressed back to them ("ran my race" -> "ran your race")."""
    return text.replace("my ", "your ")


def _event_ev(event: tuple[str, ...], mark: str = "user") -> Evidence:
    return Evidence(event[4], event[2], event[3], mark)


def _abs_events(e1: tuple, e2: tuple, e3: tuple) -> tuple[list[Evidence], str]:
    """Evidence for an abstention over events: e1 is asked about, e2 is not, e3 never happened."""
    answer = NOT_ENOUGH + f"You mentioned that you {_yours(e1[0])} but not that you {_yours(e3[0])}."
    return [_event_ev(e1), _event_ev(e2, "")], answer


def _tr_days_between(ctx: Ctx) -> Plan:
    e1, e2, e3 = ctx.rng.sample(EVENTS, 3)
    d1 = ctx.rng.randint(0, ctx.span - 4)
    d2 = ctx.rng.randint(d1 + 3, ctx.span)
    if ctx.abstain:
        evidence, answer = _abs_events(e1, e2, e3)
        question = f"How many days passed between the day I {e1[0]} and the day I {e3[0]}?"
        return Plan(question, answer, evidence, [d1, d2])
    n = (ctx.date(d2) - ctx.date(d1)).days
    question = f"How many days passed between the day I {e1[0]} and the day I {e2[0]}?"
    answer = f"{n} days. {n + 1} days (including the last day) is also acceptable."
    return Plan(question, answer, [_event_ev(e1), _event_ev(e2)], [d1, d2])


def _tr_which_first(ctx: Ctx) -> Plan:
    e1, e2, e3 = ctx.rng.sample(EVENTS, 3)
    days = _days(ctx, 2)
    if ctx.abstain:
        evidence, answer = _abs_events(e1, e2, e3)
        pair = [e1[1], e3[1]] if ctx.rng.random() < 0.5 else [e3[1], e1[1]]
        return Plan(f"Which did I do first, {pair[0]} or {pair[1]}?", answer, evidence, days)
    pair = [e1[1], e2[1]] if ctx.rng.random() < 0.5 else [e2[1], e1[1]]
    question = f"Which did I do first, {pair[0]} or {pair[1]}?"
    return Plan(question, _cap(e1[1]), [_event_ev(e1), _event_ev(e2)], days)


def _tr_days_ago(ctx: Ctx) -> Plan:
    event = ctx.rng.choice(EVENTS)
    day = ctx.rng.randint(0, ctx.span)
    n = (ctx.date(ctx.qday) - ctx.date(day)).days
    question = f"How many days have passed since I {event[0]}?"
    return Plan(question, f"{n} days", [_event_ev(event)], [day])


def _tr_bought_ago(ctx: Ctx) -> Plan:
    category, item, user, assistant, topic = ctx.rng.choice(PURCHASES)
    ago = ctx.rng.choice([k for k in TIME_AGO if k <= ctx.qday])
    day = ctx.qday - ago
    question = f"What {category} did I buy {TIME_AGO[ago]}?"
    return Plan(question, _cap(item), [Evidence(topic, user, assistant, "user")], [day])


def _tr_order_of_three(ctx: Ctx) -> Plan:
    events = ctx.rng.sample(EVENTS, 3)
    shown = ctx.rng.sample(events, 3)
    question = ("In what order did I do these three things, from earliest to latest: "
                f"{shown[0][1]}, {shown[1][1]}, and {shown[2][1]}?")
    answer = f"First {events[0][1]}, then {events[1][1]}, and finally {events[2][1]}."
    return Plan(question, answer, [_event_ev(e) for e in events], _days(ctx, 3))


def _tr_weekday(ctx: Ctx) -> Plan:
    event = ctx.rng.choice(EVENTS)
    day = ctx.rng.randint(0, ctx.span)
    question = f"What day of the week was it when I {event[0]}?"
    answer = WEEKDAY_NAMES[ctx.date(day).weekday()]
    return Plan(question, answer, [_event_ev(event)], [day])


def _ms_evidence(ctx: Ctx, topic: str, pairs: list[tuple[str, str]], values: list[str]) -> list[Evidence]:
    """One evidence exchange per session, each from a different template; {x} is the value."""
    chosen = ctx.rng.sample(pairs, len(values))
    return [Evidence(topic, u.format(x=v), a.format(x=v), "user")
            for (u, a), v in zip(chosen, values)]


def _ms_board_games(ctx: Ctx) -> Plan:
    """Counting across sessions; the answer is a bare JSON number, as in some real instances."""
    n = ctx.rng.randint(2, 3)
    games = ctx.rng.sample(BOARD_GAMES, n + 1)
    values, total = games[:n], n
    if ctx.rng.random() < 0.5:
        values[0], total = f"{games[0]} and {games[n]}", n + 1
    evidence = _ms_evidence(ctx, "home", MS_GAMES, values)
    if ctx.abstain:
        answer = NOT_ENOUGH + "You mentioned buying board games but not video games."
        return Plan("How many video games did I buy?", answer, evidence, _days(ctx, n))
    return Plan("How many board games did I buy?", total, evidence, _days(ctx, n))


def _ms_concerts(ctx: Ctx) -> Plan:
    n = ctx.rng.randint(2, 3)
    amounts = ctx.rng.sample([45, 60, 75, 85, 90, 120, 135, 150], n)
    bands = ctx.rng.sample(BANDS, n)
    chosen = ctx.rng.sample(MS_CONCERTS, n)
    evidence = [Evidence("music", u.format(x=x, band=b), a, "user")
                for (u, a), x, b in zip(chosen, amounts, bands)]
    if ctx.abstain:
        answer = NOT_ENOUGH + "You mentioned spending on concert tickets but not on theater tickets."
        return Plan("How much have I spent on theater tickets in total?", answer, evidence,
                    _days(ctx, n))
    question = "How much have I spent on concert tickets in total?"
    return Plan(question, f"${sum(amounts):,}", evidence, _days(ctx, n))


def _ms_volunteer(ctx: Ctx) -> Plan:
    n = ctx.rng.randint(2, 3)
    hours = [ctx.rng.randint(2, 6) for _ in range(n)]
    evidence = _ms_evidence(ctx, "career", MS_VOLUNTEER, [str(h) for h in hours])
    question = "How many hours have I spent volunteering in total?"
    return Plan(question, f"{sum(hours)} hours", evidence, _days(ctx, n))


def _ms_cycling(ctx: Ctx) -> Plan:
    n = ctx.rng.randint(2, 3)
    km = [ctx.rng.choice([18, 25, 32, 40, 47, 55, 60]) for _ in range(n)]
    evidence = _ms_evidence(ctx, "fitness", MS_CYCLING, [str(k) for k in km])
    if ctx.abstain:
        answer = NOT_ENOUGH + "You mentioned your bike rides but not any runs."
        return Plan("How many kilometers have I run in total?", answer, evidence, _days(ctx, n))
    question = "How many kilometers have I cycled in total on the rides I told you about?"
    return Plan(question, f"{sum(km)} km", evidence, _days(ctx, n))


def _ms_work_trips(ctx: Ctx) -> Plan:
    n = ctx.rng.randint(2, 3)
    evidence = _ms_evidence(ctx, "career", MS_TRIPS, ctx.rng.sample(WORK_CITIES, n))
    return Plan("How many different cities did I travel to for work?", str(n), evidence, _days(ctx, n))


def _ms_purchases(ctx: Ctx) -> Plan:
    n = ctx.rng.randint(2, 3)
    bought = ctx.rng.sample(PURCHASES, n)
    items = [p[1] for p in bought]
    answer = ", ".join(items[:-1]) + f" and {items[-1]}"
    evidence = [Evidence(p[4], p[2], p[3], "user") for p in bought]
    return Plan("What items did I mention buying?", _cap(answer), evidence, _days(ctx, n))


def _bank(bank: list[dict[str, Any]], build: Callable[..., Plan], **kw: Any) -> list[Scenario]:
    return [Scenario(functools.partial(build, entry=e, **kw), "abs_question" in e) for e in bank]


SCENARIOS: dict[str, list[Scenario]] = {
    "single-session-user": _bank(SSU_BANK, _single_session, mark="user"),
    "single-session-assistant": _bank(SSA_BANK, _single_session, mark="assistant"),
    "single-session-preference": _bank(SSP_BANK, _single_session, mark="user"),
    "temporal-reasoning": [
        Scenario(_tr_which_first, True), Scenario(_tr_days_between, True),
        Scenario(_tr_days_ago, False), Scenario(_tr_bought_ago, False),
        Scenario(_tr_order_of_three, False), Scenario(_tr_weekday, False),
    ],
    "knowledge-update": _bank(KU_BANK, _knowledge_update),
    "multi-session": [
        Scenario(_ms_board_games, True), Scenario(_ms_concerts, True),
        Scenario(_ms_volunteer, False), Scenario(_ms_cycling, True),
        Scenario(_ms_work_trips, False), Scenario(_ms_purchases, False),
    ],
}
QUESTION_TYPES = tuple(SCENARIOS)
GPT4_TYPES = ("temporal-reasoning", "multi-session")

# (question_type, plain questions, abstention questions) of the bundled sample.
SAMPLE_PLAN = (
    ("single-session-user", 6, 2),
    ("single-session-assistant", 6, 0),
    ("single-session-preference", 6, 0),
    ("temporal-reasoning", 6, 2),
    ("knowledge-update", 6, 1),
    ("multi-session", 6, 2),
)


# ---- ids, dates and assembly -----------------------------------------------------------------


def _unique(rng: random.Random, used: set[str], make: Callable[[random.Random], str]) -> str:
    while True:
        token = make(rng)
        if token not in used and "answer" not in token:
            used.add(token)
            return token


def _hex8(rng: random.Random) -> str:
    return f"{rng.getrandbits(32):08x}"


def _filler_id(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.5:
        base = _hex8(rng)
        return base if rng.random() < 0.6 else f"{base}_{rng.randint(1, 3)}"
    if kind < 0.75:
        alnum = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(7))
        return f"sharegpt_{alnum}_{rng.randint(0, 2)}"
    return f"ultrachat_{rng.randint(100000, 599999)}"


def _question_id(rng: random.Random, spec: Spec, used: set[str]) -> str:
    base = _unique(rng, used, _hex8)
    return ("gpt4_" if spec.gpt4 else "") + base + ("_abs" if spec.abstain else "")


def _answer_ids(rng: random.Random, spec: Spec, n: int, used: set[str]) -> list[str]:
    if spec.qtype == "single-session-assistant" and not spec.abstain and rng.random() < 0.35:
        return ["answer_" + _unique(rng, used, lambda r: f"ultrachat_{r.randint(100000, 599999)}")]
    base = "answer_" + _unique(rng, used, _hex8)
    if spec.abstain:
        return [f"{base}_abs_{i}" for i in range(1, n + 1)]
    return [base] if n == 1 else [f"{base}_{i}" for i in range(1, n + 1)]


def format_date(moment: datetime) -> str:
    """Upstream date text, e.g. "2023/05/20 (Sat) 02:21" (English weekday, locale-independent)."""
    return f"{moment:%Y/%m/%d} ({WEEKDAYS[moment.weekday()]}) {moment:%H:%M}"


def _moment(rng: random.Random, day: date, taken: set[datetime], lo: int = 0, hi: int = 1439) -> datetime:
    while True:
        moment = datetime.combine(day, datetime.min.time()) + timedelta(minutes=rng.randint(lo, hi))
        if moment not in taken:
            taken.add(moment)
            return moment


def _schedule(ctx: Ctx, sessions: list[tuple[str, int, list]], quirk: bool) -> tuple[list, datetime]:
    """Timestamp sessions and the question; with ``quirk`` the last session lands minutes after the
    question on the same day (the upstream same-day timestamp quirk, issue #8)."""
    taken: set[datetime] = set()
    qmoment = _moment(ctx.rng, ctx.date(ctx.qday), taken, *((360, 1320) if quirk else (0, 1439)))
    stamped = []
    for i, (sid, day, turns) in enumerate(sessions):
        if quirk and i == len(sessions) - 1:
            moment = qmoment + timedelta(minutes=ctx.rng.randint(5, 45))
        else:
            moment = _moment(ctx.rng, ctx.date(day), taken)
        stamped.append((moment, sid, turns))
    stamped.sort(key=lambda s: s[0])
    return stamped, qmoment


def _fillers(rng: random.Random, n: int, span: int, avoid: set[str], profile: Profile,
             used: set[str]) -> list[tuple[str, int, list]]:
    topics = [t for t in TOPICS if t not in avoid]
    return [(_unique(rng, used, _filler_id), rng.randint(0, span),
             _filler_session(rng, rng.choice(topics), profile)) for _ in range(n)]


def _instance(rng: random.Random, spec: Spec, profile: Profile, used: set[str]) -> dict[str, Any]:
    span = rng.randint(*profile.span_days)
    start = FIRST_DAY + timedelta(days=rng.randint(0, 240))
    ctx = Ctx(rng, spec.abstain, span, span + rng.randint(1, 4), start)
    plan = spec.scenario.build(ctx)
    qid = _question_id(rng, spec, used)
    ids = _answer_ids(rng, spec, len(plan.evidence), used)
    sessions = [(sid, day, _answer_session(rng, ev, profile))
                for sid, day, ev in zip(ids, plan.days, plan.evidence)]
    n_fill = rng.randint(*profile.sessions) - len(sessions)
    sessions += _fillers(rng, n_fill, span, {ev.topic for ev in plan.evidence}, profile, used)
    stamped, qmoment = _schedule(ctx, sessions, spec.quirk)
    return {
        "question_id": qid,
        "question_type": spec.qtype,
        "question": plan.question,
        "answer": plan.answer,
        "question_date": format_date(qmoment),
        "haystack_session_ids": [sid for _, sid, _ in stamped],
        "haystack_dates": [format_date(m) for m, _, _ in stamped],
        "haystack_sessions": [turns for _, _, turns in stamped],
        "answer_session_ids": [sid for _, sid, _ in stamped if "answer" in sid],
    }


def _sample_specs(rng: random.Random) -> list[Spec]:
    specs = []
    for qtype, n_plain, n_abs in SAMPLE_PLAN:
        plain = SCENARIOS[qtype]
        abstaining = [s for s in plain if s.abstains]
        for i in range(n_plain + n_abs):
            abstain = i >= n_plain
            scenario = abstaining[(i - n_plain) % len(abstaining)] if abstain else plain[i % len(plain)]
            gpt4 = qtype in GPT4_TYPES and rng.random() < 0.5
            quirk = qtype == "temporal-reasoning" and i == n_plain  # the first temporal abstention
            specs.append(Spec(qtype, scenario, abstain, gpt4, quirk))
    rng.shuffle(specs)
    return specs


def generate_sample(seed: int = DEFAULT_SEED) -> list[dict[str, Any]]:
    """The bundled sample: 43 instances covering all six types and 7 abstention questions."""
    master = random.Random(seed)
    used: set[str] = set()
    return [_instance(random.Random(master.getrandbits(64)), spec, SAMPLE_PROFILE, used)
            for spec in _sample_specs(master)]


def _synthetic_spec(rng: random.Random, index: int) -> Spec:
    qtype = QUESTION_TYPES[index % len(QUESTION_TYPES)]
    abstain = rng.random() < 0.06 and any(s.abstains for s in SCENARIOS[qtype])
    scenario = rng.choice([s for s in SCENARIOS[qtype] if s.abstains or not abstain])
    gpt4 = qtype in GPT4_TYPES and rng.random() < 0.5
    return Spec(qtype, scenario, abstain, gpt4, rng.random() < 0.15)



def generate_synthetic(n_questions: int, sessions_per_haystack: int, seed: int) -> Iterator[dict[str, Any]]:
    """Yield ``n_questions`` large instances with exactly ``sessions_per_haystack`` sessions each
    (about 10 turns per session), built by the same machinery as the sample; lazily, one at a time."""
    if sessions_per_haystack < 4:
        raise ValueError(f"sessions_per_haystack must be at least 4, got {sessions_per_haystack}")
    profile = Profile((sessions_per_haystack,) * 2, (4, 5, 5, 5, 6),
                      (max(24, sessions_per_haystack // 2), max(40, sessions_per_haystack)), 13)
    master = random.Random(seed)
    used: set[str] = set()
    for index in range(n_questions):
        spec = _synthetic_spec(master, index)
        yield _instance(random.Random(master.getrandbits(64)), spec, profile, used)


# ---- output ----------------------------------------------------------------------------------


def write_json_list(path: str | os.PathLike[str], items: Iterable[Any]) -> int:
    """Stream ``items`` to ``path`` atomically, byte-identical to
    ``json.dumps(list(items), indent=2, ensure_ascii=False) + "\\n"``; returns the item count."""
    n = 0
    with atomic_open(path) as fh:
        for item in items:
            fh.write("[\n  " if n == 0 else ",\n  ")
            fh.write(json.dumps(item, indent=2, ensure_ascii=False).replace("\n", "\n  "))
            n += 1
        fh.write("\n]\n" if n else "[]\n")
    return n


def write_sample(path: str | os.PathLike[str] = DEFAULT_OUT, seed: int = DEFAULT_SEED) -> int:
    """Write the bundled sample atomically (same bytes on every run); returns the instance count."""
    instances = generate_sample(seed)
    with atomic_open(path) as fh:
        fh.write(json.dumps(instances, indent=2, ensure_ascii=False) + "\n")
    return len(instances)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mnemetric.data.sample",
                                     description="Write Mnemetric's LongMemEval-format sample data.")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"output JSON file (default {DEFAULT_OUT})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    parser.add_argument("--synthetic", type=int, metavar="N", help="write N large synthetic questions instead")
    parser.add_argument("--sessions", type=int, default=48, metavar="S",
                        help="sessions per synthetic haystack (default 48)")
    args = parser.parse_args(argv)
    if args.synthetic is not None:
        n = write_json_list(args.out, generate_synthetic(args.synthetic, args.sessions, args.seed))
    else:
        n = write_sample(args.out, args.seed)
    print(f"wrote {n} instances to {args.out} (sha256 {sha256_file(args.out)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
