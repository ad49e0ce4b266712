session.Run(Ort::RunOptions{ nullptr }, inputNames.data(),
		inputTensors.data(), 1, outputNames.data(),
		outputTensors.data(), 1);
