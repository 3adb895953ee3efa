"""The ground floor: names and choices, defaults, the cache folder, atomic files and locks, JSON specs, package
downloads. Nothing here imports torch or any other layer of headprune."""
