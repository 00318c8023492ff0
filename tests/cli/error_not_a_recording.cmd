info not-a-recording.txt
