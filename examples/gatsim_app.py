"""GATSim in the browser: the urban daily-travel model live, or a saved run replayed.

    mlm viz install-assets                      # once: Solara's front end, for offline use
    solara run examples/gatsim_app.py           # the live model (rule brain, no API key)
    solara run examples/gatsim_app.py -- --run runs/urban   # replay and fork a saved run
    solara run examples/gatsim_app.py -- --published        # the paper's published LLM run

Each browser tab gets its own model. Set ``MLM_BRAIN=llm:<model>`` (and ``MLM_API_BASE`` /
``MLM_API_KEY``) to offer an LLM brain in the parameters. See docs/app.md.
"""

from mesa_llm_mobility.urban.app.components import Page
from mesa_llm_mobility.viz.assets import keep_solara_offline

keep_solara_offline()  # no usage data, no install check: no request leaves the machine

page = Page()
