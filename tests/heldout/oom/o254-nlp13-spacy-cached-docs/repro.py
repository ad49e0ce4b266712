import spacy
import time

models = [
    'en_core_web_lg',
    #'de_core_news_lg',
]

i = 0
while True:
    spacy.prefer_gpu()
    nlp = spacy.load(models[i % len(models)])
    print('.')
    time.sleep(1)
    del nlp
    i += 1
