from __future__ import annotations

from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY
from mesa_llm_mobility.urban.model import UrbanMobilityModel

from .conftest import town_personas


def _day() -> UrbanMobilityModel:
    model = UrbanMobilityModel(population=town_personas(), n_agents=20, rng=1)
    return model.run()


def test_one_record_per_revision_in_the_run_and_in_the_travellers_day():
    with _day() as model:
        records = model.itinerary.revisions
        assert records, "a rule day has revisions"
        for record in records:
            assert any(r is record for r in model.travellers[record.agent].revisions)
        frame = model.revisions_frame()
        assert len(frame) == len(records)
        assert list(frame["agent"]) == [r.agent for r in records]
        assert (frame["minute"] < MINUTES_PER_DAY).all()


def test_the_wake_up_schedule_ends_the_day_with_everyone_home_and_unmirrored():
    with _day() as model:
        assert model.trips_in_progress == 0
        assert model.arrived == model.departed == len(model.trips_frame())
        assert not model.itinerary.active
        assert {a.state for a in model.travellers.values()} == {"staying"}
