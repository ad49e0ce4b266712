python retrieve.py -m vectorize -md esm2
