conda create -n bug_env
conda activate bug_env
conda install pytorch==1.8.0 torchvision==0.9.0 torchaudio==0.8.0 cudatoolkit=10.2 -c pytorch
pip install pytorch-lightning@git+https://github.com/PytorchLightning/pytorch-lightning.git@master

wget https://gist.githubusercontent.com/ianporada/541721f439b0a30dfb1dc6b4db3d6946/raw/1cb4b597b9ef1ca9ca7f788dbd2a1a24cee2be44/bug_report_model.py
python bug_report_model.py
