import time
from transformers import BartTokenizer, BartForConditionalGeneration

device = 'cpu'

# change to GPU
# device = 'cuda:0'

text_to_summarize = "My friends are cool but they eat too many carbs."

tokenizer = BartTokenizer.from_pretrained('facebook/bart-base')
model = BartForConditionalGeneration.from_pretrained('facebook/bart-base')

inputs = tokenizer(text_to_summarize, return_tensors='pt')

inputs = inputs['input_ids'].to(device)
model = model.to(device)

start = time.time()
summary_ids = model.generate(inputs)
print("Time spent (s): ", time.time() - start)
