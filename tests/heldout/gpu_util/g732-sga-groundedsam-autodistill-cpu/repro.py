# define an ontology to map class names to our GroundingDINO prompt
# the ontology dictionary has the format {caption: class}
# where caption is the prompt sent to the base model, and class is the label that will
# be saved for that caption in the generated annotations
base_model = GroundedSAM(ontology=CaptionOntology({"beverage containers": "container"}))

# label all images in a folder called `context_images`
base_model.label(
  input_folder=r"C:\Users\markc\Desktop\bottleCounterData",
  output_folder=r"C:\Users\markc\Desktop\labeled_output"
)
