"""Videos and pictures: the ghost video and the contact sheet."""
