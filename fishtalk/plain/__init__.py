"""Line mode: the front end for pipes and plain terminals (``--plain``). Never loads textual."""
