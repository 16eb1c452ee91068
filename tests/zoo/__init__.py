"""The zoo of broken clients: the reference client with one behaviour changed each."""
