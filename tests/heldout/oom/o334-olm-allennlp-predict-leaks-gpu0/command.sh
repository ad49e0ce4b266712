> python -m allennlp.run predict \
https://s3-us-west-2.amazonaws.com/allennlp/models/elmo-constituency-parser-2018.03.14.tar.gz \
--cuda-device 1 --batch-size 64 sentences_01 --predictor=constituency-parser > sentences_01.pred
