"""Start the speccascade analyzer (also the Hugging Face Spaces entry point).

    python app.py            # http://127.0.0.1:7860, embedded demo pair, offline, CPU

Settings come from environment variables; see the README ("Deployment settings").
"""

from speccascade.app import launch

if __name__ == "__main__":
    launch()
