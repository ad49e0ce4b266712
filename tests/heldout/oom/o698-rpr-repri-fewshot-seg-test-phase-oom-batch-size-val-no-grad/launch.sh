bash scripts/train.sh pascal 0 [0,1] 50
