"""Browser apps: what the Solara front end needs to run, with or without internet.

:mod:`mesa_llm_mobility.viz.assets` installs the npm packages that Solara's page loads through
its CDN proxy into Solara's asset cache, so an app opens on a machine that reaches the npm
registry but no CDN (``mlm viz install-assets``).
"""
