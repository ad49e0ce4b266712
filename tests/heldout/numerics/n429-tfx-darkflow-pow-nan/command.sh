python flow --model cfg/tiny-yolo-voc-3c.cfg --train --dataset VOCdevkit/VOC2012/JPEGImages --ann
otation VOCdevkit/VOC2012/Annotations --lr 0.001 --batch 32 --gpu 0.6
python flow --model cfg/tiny-yolo-voc-3c.cfg --train --dataset VOCdevkit/VOC2012/JPEGImages --ann
otation VOCdevkit/VOC2012/Annotations --lr 0.001 --batch 32
