"""`python -m kael`: the tour."""

from kael.frontend.tour import main

main()
