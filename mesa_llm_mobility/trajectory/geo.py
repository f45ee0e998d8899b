"""Great-circle distances on POI coordinates (Haversine, vectorised).

``haversine_km(lat1, lon1, lat2, lon2) = 2 R asin(sqrt(sin^2(dlat / 2) + cos(lat1) cos(lat2)
sin^2(dlon / 2)))`` with the mean Earth radius R = 6371.0 km, on scalars or numpy arrays.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

EARTH_RADIUS_KM = 6371.0
"""Mean Earth radius (km) of the Haversine formula."""


def haversine_km(
    lat1: ArrayLike, lon1: ArrayLike, lat2: ArrayLike, lon2: ArrayLike
) -> np.ndarray:
    """Great-circle distance in km between points given in degrees (broadcasting)."""
    phi1, lam1, phi2, lam2 = (
        np.radians(np.asarray(value, dtype=float)) for value in (lat1, lon1, lat2, lon2)
    )
    a = (
        np.sin((phi2 - phi1) / 2.0) ** 2
        + np.cos(phi1) * np.cos(phi2) * np.sin((lam2 - lam1) / 2.0) ** 2
    )
    return 2.0 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(a, 0.0, 1.0)))
